//! How a loss reduces its per-element values: PyTorch's `reduction=` argument,
//! as a type instead of a string or an integer code.

use std::fmt;

/// How a loss (`mse_loss`, `cross_entropy`, ...) reduces its per-element
/// losses, as PyTorch's `reduction=` does. The default is
/// [`Reduction::Mean`], PyTorch's default.
///
/// ```
/// use batchrules::{ops, Reduction, Tensor};
///
/// let pred = Tensor::from(ndarray::array![1.0f64, 2.0, 4.0]);
/// let target = Tensor::from(ndarray::array![1.0f64, 1.0, 1.0]);
/// let each = ops::mse_loss(&pred, &target, Reduction::None)?;
/// assert_eq!(each.to_array::<f64>()?.as_slice(), Some(&[0.0, 1.0, 9.0][..]));
/// let sum = ops::mse_loss(&pred, &target, Reduction::Sum)?;
/// assert_eq!(sum.to_array::<f64>()?[[]], 10.0);
/// # Ok::<(), batchrules::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// One loss per element (or per row, for a classification loss).
    None,
    /// The mean of the losses (PyTorch's default).
    #[default]
    Mean,
    /// The sum of the losses.
    Sum,
}

impl fmt::Display for Reduction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reduction::None => "none",
            Reduction::Mean => "mean",
            Reduction::Sum => "sum",
        })
    }
}
