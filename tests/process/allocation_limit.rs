//! The allocation limit is a process-wide setting: this test runs with no
//! other test of any suite beside it (see `main.rs`).

use batchrules::{ops, Tensor};

#[test]
fn the_allocation_limit_is_a_setting() {
    let _exclusive = super::exclusive();
    let x = Tensor::from_shape_vec(&[4], vec![1.0f32; 4]).unwrap();
    assert!(ops::expand(&x, &[1000, 4]).is_ok());
    batchrules::set_allocation_limit(1000);
    let err = ops::expand(&x, &[1000, 4]).unwrap_err();
    batchrules::set_allocation_limit(batchrules::DEFAULT_ALLOCATION_LIMIT);
    assert!(err.to_string().starts_with("expand: "), "{err}");
    assert!(
        err.to_string()
            .contains("over the allocation limit of 1000 bytes"),
        "{err}"
    );
    assert!(ops::expand(&x, &[1000, 4]).is_ok());
}
