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

// Tested in tests/suite/compat.rs (the suite's feature `ndarray-0-16`).
