//! Reciprocal-rank fusion of the vector and the keyword ranking, as upstream's hybrid search.
//! Pure: no I/O.

use std::collections::BTreeMap;

/// Reciprocal-rank fusion constant and weights (vector, keyword), as upstream.
const RRF_K: f64 = 60.0;
const RRF_WEIGHTS: (f64, f64) = (1.125, 1.0);

/// The best `top_k` of two rankings (item, score; best first) fused: an item gets, from each
/// ranking whose first `top_k` it is among, that ranking's weight / (`RRF_K` + its place,
/// from 1). Best first; equal scores keep the lower item first.
pub(super) fn fuse(by_vector: &[(usize, f64)], by_keyword: &[(usize, f64)], top_k: usize) -> Vec<(usize, f64)> {
    let mut fused: BTreeMap<usize, f64> = BTreeMap::new();
    for (rank, (i, _)) in by_vector.iter().take(top_k).enumerate() {
        *fused.entry(*i).or_insert(0.0) += RRF_WEIGHTS.0 / (RRF_K + rank as f64 + 1.0);
    }
    for (rank, (i, _)) in by_keyword.iter().take(top_k).enumerate() {
        *fused.entry(*i).or_insert(0.0) += RRF_WEIGHTS.1 / (RRF_K + rank as f64 + 1.0);
    }
    let mut ranked: Vec<(usize, f64)> = fused.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(top_k);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_in_both_rankings_beats_items_in_one_and_vectors_weigh_more() {
        // Item 1 is second by vector and first by keyword; 0 is first by vector only, 3
        // second by keyword only; 2 is outside the vector ranking's first `top_k`.
        let fused = fuse(&[(0, 0.9), (1, 0.5), (2, 0.1)], &[(1, 3.0), (3, 1.0)], 2);
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 0]);
        assert_eq!(fused[0].1, 1.125 / 62.0 + 1.0 / 61.0);
        assert_eq!(fused[1].1, 1.125 / 61.0);
        // The same place in either ranking: the vector one wins.
        assert_eq!(fuse(&[(5, 0.1)], &[(4, 9.0)], 5).iter().map(|f| f.0).collect::<Vec<_>>(), [5, 4]);
        assert!(fuse(&[], &[], 3).is_empty());
    }
}
