// An alias is judged by the type it stands for: `Diagonal` is `i32`, and the
// schema's `int` is `i64`. A `Result` of another crate's error type is not
// `batchrules::Result` either.
use batchrules::{kernel, Tensor};

type Diagonal = i32;

mod other {
    pub struct Error;
    pub type Result<T> = std::result::Result<T, Error>;
}

#[kernel(op = "triu")]
fn triu_kernel(x: &Tensor, diagonal: Diagonal) -> other::Result<Tensor> {
    let _ = (x, diagonal);
    todo!()
}

fn main() {}
