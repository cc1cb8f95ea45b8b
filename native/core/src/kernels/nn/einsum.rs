//! Einsum with one or two operands and an explicit output ("->"), as TensorFlow accepts it:
//! letters, one ellipsis per term (broadcast across operands), repeated labels within an
//! operand (diagonals) and labels summed away. Two operands become one batched GEMM: each is
//! brought into (batch, free, contracted) order (no copy when it already is, or is
//! transposed), batch dims broadcast through per-product offsets, and the result is permuted
//! into the output's order only when it is not already in it (BERT's 'abc,cde->abde' and
//! 'aecd,abcd->acbe' need no output copy).

use std::borrow::Cow;

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::gemm::{Batch, Layout};
use crate::kernels::nn::layout::{gather, permute, strides};
use crate::kernels::nn::num::{run_num, zeros, Num, NumOp};
use crate::kernels::util::{broadcast_offsets, make};
use crate::tensor::{element_count, Tensor};

const TYPES: [DType; 8] = [
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
    DType::Int32,
    DType::Int64,
    DType::Complex64,
    DType::Complex128,
];

/// One term of the equation: its letters, and where its ellipsis stands (if it has one).
#[derive(Clone, Debug)]
struct Term {
    letters: Vec<u8>,
    ellipsis: Option<usize>,
}

/// Label ids: letters are their byte; broadcast (ellipsis) dims count from this base.
const ELLIPSIS_BASE: usize = 256;

fn parse_term(text: &str) -> Result<Term, String> {
    let mut letters = Vec::new();
    let mut ellipsis = None;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'.' if bytes[i..].starts_with(b"...") && ellipsis.is_none() => {
                ellipsis = Some(letters.len());
                i += 3;
            }
            b if b.is_ascii_alphabetic() => {
                letters.push(b);
                i += 1;
            }
            _ => return Err(format!("invalid subscripts {text:?}")),
        }
    }
    Ok(Term { letters, ellipsis })
}

fn parse(equation: &str) -> Result<(Vec<Term>, Term), String> {
    let compact: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let Some((inputs, output)) = compact.split_once("->") else {
        return Err(format!(
            "Einsum needs an explicit equation ('->'), got {equation:?}"
        ));
    };
    let inputs = inputs
        .split(',')
        .map(parse_term)
        .collect::<Result<Vec<_>, _>>()?;
    if !(1..=2).contains(&inputs.len()) {
        return Err(format!(
            "Einsum takes 1 or 2 inputs, {equation:?} has {}",
            inputs.len()
        ));
    }
    let output = parse_term(output)?;
    for (i, &l) in output.letters.iter().enumerate() {
        if output.letters[..i].contains(&l) {
            return Err(format!(
                "output subscript {} repeats in {equation:?}",
                l as char
            ));
        }
        if !inputs.iter().any(|t| t.letters.contains(&l)) {
            return Err(format!(
                "output subscript {} appears in no input of {equation:?}",
                l as char
            ));
        }
    }
    Ok((inputs, output))
}

pub fn einsum(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let equation = node.attrs.string("equation")?;
    let (terms, output) = parse(equation)?;
    Ok(boxed(move |_, inputs| {
        if inputs.len() != terms.len() {
            return Err(fail(format!(
                "the equation has {} inputs, the node {}",
                terms.len(),
                inputs.len()
            )));
        }
        let tensors = (0..inputs.len())
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<Vec<_>>>()?;
        let refs: Vec<&Tensor> = tensors.iter().map(|t| &**t).collect();
        one(evaluate(&terms, &output, &refs)?)
    }))
}

/// Each operand's label per dim (ellipses expanded), and the output's labels.
fn labels(
    terms: &[Term],
    output: &Term,
    inputs: &[&Tensor],
) -> KResult<(Vec<Vec<usize>>, Vec<usize>)> {
    let mut ranks = Vec::new();
    for (term, t) in terms.iter().zip(inputs) {
        let extra = t.rank().checked_sub(term.letters.len());
        match (extra, term.ellipsis) {
            (Some(e), Some(_)) => ranks.push(e),
            (Some(0), None) => ranks.push(0),
            _ => {
                return Err(fail(format!(
                    "input of shape {:?} does not match its subscripts {:?}",
                    t.shape(),
                    String::from_utf8_lossy(&term.letters)
                )))
            }
        }
    }
    let broadcast = ranks.iter().copied().max().unwrap_or(0);
    let expand = |term: &Term, rank: usize| -> Vec<usize> {
        let mut out: Vec<usize> = term.letters.iter().map(|&l| usize::from(l)).collect();
        if let Some(at) = term.ellipsis {
            let dims = (broadcast - rank..broadcast).map(|d| ELLIPSIS_BASE + d);
            out.splice(at..at, dims);
        }
        out
    };
    let operands = terms
        .iter()
        .zip(&ranks)
        .map(|(t, &r)| expand(t, r))
        .collect();
    let out = if output.ellipsis.is_some() {
        expand(output, broadcast)
    } else {
        expand(output, 0)
    };
    Ok((operands, out))
}

/// Every label's size across the operands: named labels must agree; broadcast dims may be 1.
fn label_sizes(operands: &[Vec<usize>], inputs: &[&Tensor]) -> KResult<Vec<usize>> {
    let mut sizes = vec![None::<usize>; ELLIPSIS_BASE * 2];
    for (labels, t) in operands.iter().zip(inputs) {
        for (&l, &d) in labels.iter().zip(t.shape()) {
            let slot = sizes
                .get_mut(l)
                .ok_or_else(|| fail("too many broadcast dimensions"))?;
            *slot = match *slot {
                None => Some(d),
                Some(s) if s == d => Some(s),
                Some(1) if l >= ELLIPSIS_BASE => Some(d),
                Some(s) if l >= ELLIPSIS_BASE && d == 1 => Some(s),
                Some(s) => {
                    return Err(fail(format!(
                        "Expected dimension {s} for subscript {} but got {d}, in shapes {:?}",
                        label_name(l),
                        inputs.iter().map(|t| t.shape()).collect::<Vec<_>>()
                    )))
                }
            };
        }
    }
    Ok(sizes.into_iter().map(|s| s.unwrap_or(1)).collect())
}

fn label_name(l: usize) -> String {
    if l < ELLIPSIS_BASE {
        char::from(l as u8).to_string()
    } else {
        "...".into()
    }
}

fn evaluate(terms: &[Term], output: &Term, inputs: &[&Tensor]) -> KResult<Tensor> {
    let (operands, out_labels) = labels(terms, output, inputs)?;
    let sizes = label_sizes(&operands, inputs)?;
    let shape: Vec<usize> = out_labels.iter().map(|&l| sizes[l]).collect();
    element_count(&shape).ok_or_else(|| fail(format!("output shape {shape:?} is too large")))?;
    let call = Call {
        operands: operands
            .iter()
            .zip(inputs)
            .map(|(labels, t)| (labels.clone(), t.shape().to_vec()))
            .collect(),
        out_labels,
        sizes,
    };
    make(shape, run_num(&call, inputs, &TYPES, "Einsum")?)
}

struct Call {
    /// Each operand's labels and shape.
    operands: Vec<(Vec<usize>, Vec<usize>)>,
    out_labels: Vec<usize>,
    sizes: Vec<usize>,
}

/// An operand on its way to the product: its elements with one label per dim.
struct Operand<'a, T: Clone> {
    data: Cow<'a, [T]>,
    labels: Vec<usize>,
    shape: Vec<usize>,
}

impl<'a, T: Num> Operand<'a, T> {
    /// The diagonal over repeated labels (their dims must agree).
    fn diagonal(self) -> KResult<Self> {
        let mut labels: Vec<usize> = Vec::new();
        let mut shape = Vec::new();
        let mut steps = Vec::new();
        for ((&l, &d), s) in self
            .labels
            .iter()
            .zip(&self.shape)
            .zip(strides(&self.shape))
        {
            match labels.iter().position(|&x| x == l) {
                Some(i) if shape[i] == d => steps[i] += s,
                Some(i) => {
                    return Err(fail(format!(
                        "repeated subscript {} has dims {} and {d}",
                        label_name(l),
                        shape[i]
                    )))
                }
                None => {
                    labels.push(l);
                    shape.push(d);
                    steps.push(s);
                }
            }
        }
        if labels.len() == self.labels.len() {
            return Ok(self);
        }
        let data = gather(&self.data, &shape, &steps);
        Ok(Self {
            data: Cow::Owned(data),
            labels,
            shape,
        })
    }

    /// The elements reordered so that the labels run in `order` (a permutation of them).
    fn ordered(self, order: &[usize]) -> Self {
        let perm: Vec<usize> = order
            .iter()
            .filter_map(|l| self.labels.iter().position(|x| x == l))
            .collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return self;
        }
        let data = permute(&self.data, &self.shape, &perm);
        Self {
            data: Cow::Owned(data),
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            labels: order.to_vec(),
        }
    }

    /// The sum over every label not in `keep` (kept labels stay in their order).
    fn sum_except(self, keep: &[usize]) -> Self {
        let kept: Vec<usize> = self
            .labels
            .iter()
            .copied()
            .filter(|l| keep.contains(l))
            .collect();
        if kept.len() == self.labels.len() {
            return self;
        }
        let summed: Vec<usize> = self
            .labels
            .iter()
            .copied()
            .filter(|l| !keep.contains(l))
            .collect();
        let order: Vec<usize> = kept.iter().chain(&summed).copied().collect();
        let size = |o: &Self, labels: &[usize]| -> usize {
            labels
                .iter()
                .map(|l| {
                    o.labels
                        .iter()
                        .position(|x| x == l)
                        .map_or(1, |p| o.shape[p])
                })
                .product()
        };
        let run = size(&self, &summed);
        let shape: Vec<usize> = kept
            .iter()
            .filter_map(|l| {
                self.labels
                    .iter()
                    .position(|x| x == l)
                    .map(|p| self.shape[p])
            })
            .collect();
        let count: usize = shape.iter().product();
        let me = self.ordered(&order);
        let data = if run == 0 {
            vec![T::default(); count]
        } else {
            me.data
                .chunks_exact(run)
                .map(|c| c.iter().fold(T::default(), |a, &b| a.add(b)))
                .collect()
        };
        Self {
            data: Cow::Owned(data),
            labels: kept,
            shape,
        }
    }

    fn size_of(&self, label: usize) -> usize {
        self.labels
            .iter()
            .position(|&x| x == label)
            .map_or(1, |p| self.shape[p])
    }
}

impl NumOp for Call {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let mut operands = Vec::new();
        for (&data, (labels, shape)) in inputs.iter().zip(&self.operands) {
            let operand = Operand {
                data: Cow::Borrowed(data),
                labels: labels.clone(),
                shape: shape.clone(),
            };
            operands.push(operand.diagonal()?);
        }
        match <[_; 2]>::try_from(operands) {
            Ok([a, b]) => self.pair(a, b),
            Err(mut single) => {
                let a = single
                    .pop()
                    .ok_or_else(|| fail("Einsum takes 1 or 2 inputs"))?;
                Ok(a.sum_except(&self.out_labels)
                    .ordered(&self.out_labels)
                    .data
                    .into_owned())
            }
        }
    }
}

impl Call {
    /// Two operands as one batched product.
    fn pair<T: Num>(&self, a: Operand<T>, b: Operand<T>) -> KResult<Vec<T>> {
        let out = &self.out_labels;
        // Labels only one operand has and the output lacks are summed first; so are shared
        // contracted labels that one side only broadcasts (size 1 there).
        let keep = |me: &Operand<T>, other: &Operand<T>| -> Vec<usize> {
            me.labels
                .iter()
                .copied()
                .filter(|l| {
                    out.contains(l)
                        || (other.labels.contains(l) && other.size_of(*l) == me.size_of(*l))
                })
                .collect()
        };
        let (keep_a, keep_b) = (keep(&a, &b), keep(&b, &a));
        let a = a.sum_except(&keep_a);
        let b = b.sum_except(&keep_b);
        let in_both = |l: &usize| a.labels.contains(l) && b.labels.contains(l);
        let batch: Vec<usize> = out.iter().copied().filter(in_both).collect();
        let free_a: Vec<usize> = out
            .iter()
            .copied()
            .filter(|l| a.labels.contains(l) && !in_both(l))
            .collect();
        let free_b: Vec<usize> = out
            .iter()
            .copied()
            .filter(|l| b.labels.contains(l) && !in_both(l))
            .collect();
        let contract: Vec<usize> = a
            .labels
            .iter()
            .copied()
            .filter(|l| !out.contains(l) && in_both(l))
            .collect();
        let product =
            |labels: &[usize]| -> usize { labels.iter().map(|&l| self.sizes[l]).product() };
        let (m, n, k) = (product(&free_a), product(&free_b), product(&contract));
        let (a, a_layout) = arrange(a, &batch, &free_a, &contract);
        let (b, b_layout) = arrange(b, &batch, &contract, &free_b);
        let batch_shape: Vec<usize> = batch.iter().map(|&l| self.sizes[l]).collect();
        let dims = |o: &Operand<T>| -> Vec<usize> { batch.iter().map(|&l| o.size_of(l)).collect() };
        let a_offsets: Vec<usize> = broadcast_offsets(&dims(&a), &batch_shape)
            .into_iter()
            .map(|o| o * m * k)
            .collect();
        let b_offsets: Vec<usize> = broadcast_offsets(&dims(&b), &batch_shape)
            .into_iter()
            .map(|o| o * k * n)
            .collect();
        // The product's natural order is (batch, free_a, free_b); (batch, free_b, free_a)
        // is the same product written column-major.
        let swapped: Vec<usize> = batch
            .iter()
            .chain(&free_b)
            .chain(&free_a)
            .copied()
            .collect();
        let natural: Vec<usize> = batch
            .iter()
            .chain(&free_a)
            .chain(&free_b)
            .copied()
            .collect();
        let column_major = *out == swapped && *out != natural;
        let count = product(&batch) * m * n;
        let mut result = zeros(count)?;
        Batch {
            m,
            n,
            k,
            a: a_layout,
            b: b_layout,
            dst: if column_major {
                Layout::rows(0, m).t()
            } else {
                Layout::rows(0, n)
            },
            a_offsets: &a_offsets,
            b_offsets: &b_offsets,
        }
        .run(&a.data, &b.data, &mut result)?;
        if column_major || *out == natural {
            return Ok(result);
        }
        let shape: Vec<usize> = natural.iter().map(|&l| self.sizes[l]).collect();
        let perm: Vec<usize> = out
            .iter()
            .filter_map(|l| natural.iter().position(|x| x == l))
            .collect();
        Ok(permute(&result, &shape, &perm))
    }
}

/// The operand in (batch, rows, cols) order and the layout of each batch's matrix; an
/// operand already in (batch, cols, rows) order is read transposed instead of copied.
fn arrange<'a, T: Num>(
    o: Operand<'a, T>,
    batch: &[usize],
    rows: &[usize],
    cols: &[usize],
) -> (Operand<'a, T>, Layout) {
    let present = |labels: &[usize]| -> Vec<usize> {
        labels
            .iter()
            .copied()
            .filter(|l| o.labels.contains(l))
            .collect()
    };
    let (batch, rows, cols) = (present(batch), present(rows), present(cols));
    let width: usize = cols.iter().map(|&l| o.size_of(l)).product();
    let height: usize = rows.iter().map(|&l| o.size_of(l)).product();
    let transposed: Vec<usize> = batch.iter().chain(&cols).chain(&rows).copied().collect();
    if o.labels == transposed {
        return (o, Layout::rows(0, height).t());
    }
    let order: Vec<usize> = batch.iter().chain(&rows).chain(&cols).copied().collect();
    (o.ordered(&order), Layout::rows(0, width))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(equation: &str, inputs: &[&Tensor]) -> KResult<Tensor> {
        let (terms, output) = parse(equation).map_err(fail)?;
        evaluate(&terms, &output, inputs)
    }

    fn iota(shape: &[usize]) -> Tensor {
        let count: usize = shape.iter().product();
        Tensor::from_vec(shape.to_vec(), (0..count).map(|x| x as f64).collect())
    }

    #[test]
    fn attention_patterns_match_explicit_sums() {
        let (a, b) = (iota(&[2, 3, 2, 4]), iota(&[2, 5, 2, 4]));
        // 'aecd,abcd->acbe': out[a, c, b, e] = sum_d x[a, e, c, d] · y[a, b, c, d].
        let out = run("aecd,abcd->acbe", &[&a, &b]).unwrap();
        assert_eq!(out.shape(), &[2, 2, 5, 3]);
        let (x, y, z) = (
            a.values::<f64>().unwrap(),
            b.values::<f64>().unwrap(),
            out.values::<f64>().unwrap(),
        );
        let at = |dims: [usize; 4], index: [usize; 4]| {
            index.iter().zip(dims).fold(0, |acc, (&i, d)| acc * d + i)
        };
        let want: f64 = (0..4)
            .map(|d| x[at([2, 3, 2, 4], [1, 2, 1, d])] * y[at([2, 5, 2, 4], [1, 4, 1, d])])
            .sum();
        assert_eq!(z[at([2, 2, 5, 3], [1, 1, 4, 2])], want);
        // 'acbe,aecd->abcd' back again: shapes only.
        let back = run("acbe,aecd->abcd", &[&out, &a]).unwrap();
        assert_eq!(back.shape(), &[2, 5, 2, 4]);
    }

    #[test]
    fn diagonals_broadcasts_and_errors() {
        let m = iota(&[3, 3]);
        assert_eq!(
            run("ii->i", &[&m]).unwrap().values::<f64>().unwrap(),
            &[0.0, 4.0, 8.0]
        );
        assert_eq!(
            run("ii->", &[&m]).unwrap().values::<f64>().unwrap(),
            &[12.0]
        );
        let out = run(
            "...ij,...jk->...ik",
            &[&iota(&[2, 1, 2, 3]), &iota(&[3, 3, 4])],
        )
        .unwrap();
        assert_eq!(out.shape(), &[2, 3, 2, 4]);
        assert!(run("ij,jk->ik", &[&iota(&[2, 3]), &iota(&[2, 3])]).is_err());
        assert!(parse("ij,jk").is_err());
        assert!(parse("ij->ii").is_err());
        assert!(parse("ij->k").is_err());
    }
}
