//! Vector math for hybrid search and the knowledge-base file's vector encoding. Pure: no I/O.

use base64::Engine as _;

/// `v` scaled to unit length (unchanged when its length is zero or not finite).
pub(super) fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| (*x as f64) * (*x as f64)).sum::<f64>().sqrt();
    if n > 0.0 && n.is_finite() {
        for x in &mut v {
            *x = (*x as f64 / n) as f32;
        }
    }
    v
}

/// Base64 of the little-endian `f32`s (how the knowledge-base file stores a vector).
pub(super) fn encode_vector(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The vector of [`encode_vector`]'s text, or `None` when it is not one.
pub(super) fn decode_vector(s: &str) -> Option<Vec<f32>> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s.trim()).ok()?;
    if bytes.is_empty() || bytes.len() % 4 != 0 {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// The dot product (the cosine of unit vectors).
pub(super) fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_through_base64() {
        let v = vec![0.25f32, -1.5, 3.0];
        assert_eq!(decode_vector(&encode_vector(&v)), Some(v));
        assert_eq!(decode_vector("not base64!"), None);
        assert_eq!(decode_vector("AAA="), None);
    }
}
