//! Conversions for users whose arrays come from the previous ndarray release
//! (cargo feature `ndarray-0-16`). batchrules is built on ndarray 0.17; with
//! this feature a 0.16 `ArrayD` converts into a [`Tensor`] and back, copying
//! the elements in logical (row-major) order.

use crate::{Element, Error, Result, Tensor};

impl<T: Element> From<ndarray_016::ArrayD<T>> for Tensor {
    fn from(a: ndarray_016::ArrayD<T>) -> Self {
        let shape = a.shape().to_vec();
        let values: Vec<T> = a.iter().copied().collect();
        match ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), values) {
            Ok(array) => Tensor::from(array),
            // The values were read from an array of this very shape.
            Err(_) => unreachable!("an ndarray 0.16 array of shape {shape:?} has that many values"),
        }
    }
}

impl Tensor {
    /// Copies the data out as an ndarray **0.16** array of element type `T`
    /// (feature `ndarray-0-16`); see [`Tensor::to_array`] for the errors.
    pub fn to_array_v016<T: Element>(&self) -> Result<ndarray_016::ArrayD<T>> {
        let a = self.to_array::<T>()?;
        let shape = a.shape().to_vec();
        let values: Vec<T> = a.iter().copied().collect();
        ndarray_016::ArrayD::from_shape_vec(ndarray_016::IxDyn(&shape), values)
            .map_err(|e| Error::Tensor(format!("Tensor::to_array_v016: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use crate::Tensor;

    #[test]
    fn round_trips_an_ndarray_016_array() {
        let a = ndarray_016::Array::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64).into_dyn();
        let t = Tensor::from(a.t().to_owned());
        assert_eq!(t.shape(), &[3, 2]);
        let back = t.to_array_v016::<f64>().unwrap();
        assert_eq!(back, a.t());
        assert!(t.to_array_v016::<f32>().is_err());
    }
}
