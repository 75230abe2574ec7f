//! The ndarray 0.16 conversions (feature `ndarray-0-16`; `.ci/run` runs this
//! module in its release step, with the feature): a 0.16 array converts in
//! logical order whatever its layout, and back.

use batchrules::prelude::*;

use crate::recorded::values;

#[test]
fn round_trips_an_ndarray_016_array() {
    let x = Tensor::from(ndarray::Array::from_shape_fn((2, 3), |(i, j)| {
        (i * 3 + j) as f64
    }));
    let a = x.to_array_v016::<f64>().unwrap();
    assert_eq!(a.shape(), &[2, 3]);
    // [3, 2] in column-major layout: the conversion must read logical order.
    let at = a.reversed_axes();
    let t = Tensor::from(at.clone());
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(values(&t), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(t.to_array_v016::<f64>().unwrap(), at);
    assert!(t.to_array_v016::<f32>().is_err());
}
