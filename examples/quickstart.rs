use batchrules::{ops, Tensor};
use ndarray::array;
fn main() -> Result<(), batchrules::Error> {
    let x = Tensor::from(array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
    println!("{:?}", ops::triu(&x, 0)?);
    println!("{:?}", ops::softmax(&x, -1)?);
    println!(
        "{}",
        ops::triu(&ops::sum(&x, Some(0), false)?, 0).unwrap_err()
    );
    println!("{}", batchrules::coverage::report()?);
    Ok(())
}
