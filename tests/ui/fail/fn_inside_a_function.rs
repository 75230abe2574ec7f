// A function declared inside another function's body is no module's item
// either: the registration cannot name it.
use batchrules::{meta, Result};
use batchrules::rules::TensorMeta;

fn main() {
    #[meta(op = "neg")]
    fn neg_meta(x: &TensorMeta) -> Result<TensorMeta> {
        Ok(x.clone())
    }
    let _ = neg_meta;
}
