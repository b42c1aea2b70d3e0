//! Covering arrays for tests that combine features: rows of levels, one level per factor, such
//! that every pair of levels of every two factors sits together in at least one row (a "pairwise"
//! or strength-2 covering array), made by a seeded greedy search, as AETG and PICT make them: of
//! many candidate rows, keep the one that covers the most pairs not covered yet.
//!
//! Why pairs and not every combination: 22 factors of 2 to 8 levels have billions of
//! combinations, and every pair of them fits in about fifty rows. Most defects where features
//! meet need two of them (curl's and SQLite's suites are built on that observation); the seed
//! makes the rows the same on every machine, and another seed samples other triples.
//!
//! Some pairs cannot run together (the contract makes them a usage error): `allowed` says which
//! partial rows may run, a pair it refuses is not wanted, and no row ever holds one.

/// A small seeded generator (SplitMix64): the same rows on every platform and every version of
/// every crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// One pair: factor `a` at level `la` with factor `b` (> `a`) at level `lb`.
pub type Pair = (usize, usize, usize, usize);

/// The pairs a covering array of factors with `levels` levels each must hold: every pair that
/// `allowed` accepts on a row holding only that pair.
pub fn wanted(levels: &[usize], allowed: &dyn Fn(&[Option<usize>]) -> bool) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for a in 0..levels.len() {
        for b in a + 1..levels.len() {
            for la in 0..levels[a] {
                for lb in 0..levels[b] {
                    let mut row = vec![None; levels.len()];
                    row[a] = Some(la);
                    row[b] = Some(lb);
                    if allowed(&row) {
                        pairs.push((a, la, b, lb));
                    }
                }
            }
        }
    }
    pairs
}

/// Whether `row` holds `pair`.
pub fn holds(row: &[usize], (a, la, b, lb): Pair) -> bool {
    row[a] == la && row[b] == lb
}

/// Candidate rows weighed for each row kept.
const CANDIDATES: usize = 40;

/// Rows that hold every pair of [`wanted`], each row one that `allowed` accepts, from `seed`.
pub fn pairwise(levels: &[usize], allowed: &dyn Fn(&[Option<usize>]) -> bool, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = Rng::new(seed);
    let mut uncovered = wanted(levels, allowed);
    let mut rows = Vec::new();
    while !uncovered.is_empty() {
        let mut best: Option<(usize, Vec<usize>)> = None;
        for _ in 0..CANDIDATES {
            let seed_pair = uncovered[rng.below(uncovered.len())];
            let row = candidate(levels, allowed, &uncovered, seed_pair, &mut rng);
            let new = uncovered.iter().filter(|pair| holds(&row, **pair)).count();
            if best.as_ref().is_none_or(|(most, _)| new > *most) {
                best = Some((new, row));
            }
        }
        let (_, row) = best.expect("at least one candidate");
        // The candidate began with an uncovered pair, so each row covers at least one: this ends.
        uncovered.retain(|pair| !holds(&row, *pair));
        rows.push(row);
    }
    rows
}

/// A row that starts from `seed_pair` and gives every other factor, in a random order, the
/// allowed level that covers most uncovered pairs with the factors already set (ties: random).
fn candidate(
    levels: &[usize],
    allowed: &dyn Fn(&[Option<usize>]) -> bool,
    uncovered: &[Pair],
    (a, la, b, lb): Pair,
    rng: &mut Rng,
) -> Vec<usize> {
    let mut row: Vec<Option<usize>> = vec![None; levels.len()];
    row[a] = Some(la);
    row[b] = Some(lb);
    let mut order: Vec<usize> = (0..levels.len()).filter(|f| *f != a && *f != b).collect();
    rng.shuffle(&mut order);
    for f in order {
        let mut choices: Vec<usize> = (0..levels[f]).collect();
        rng.shuffle(&mut choices);
        let mut best: Option<(usize, usize)> = None;
        for level in choices {
            row[f] = Some(level);
            if !allowed(&row) {
                continue;
            }
            let gain = uncovered
                .iter()
                .filter(|(pa, pla, pb, plb)| {
                    (*pa == f && *pla == level && row[*pb] == Some(*plb))
                        || (*pb == f && *plb == level && row[*pa] == Some(*pla))
                })
                .count();
            if best.is_none_or(|(most, _)| gain > most) {
                best = Some((gain, level));
            }
        }
        // Level 0 of every factor is "off" in the tests that use this, which nothing refuses.
        row[f] = Some(best.map_or(0, |(_, level)| level));
    }
    row.into_iter().map(|level| level.unwrap_or(0)).collect()
}

#[test]
fn every_wanted_pair_is_in_a_row_and_no_row_holds_a_refused_one() {
    let levels = [5, 8, 3, 2, 2, 2, 3, 2];
    // Factor 0 at any level but 0 refuses factor 4 at level 1, as --watch refuses --submit.
    let allowed = |row: &[Option<usize>]| !(row[0].is_some_and(|l| l != 0) && row[4] == Some(1));
    let rows = pairwise(&levels, &allowed, 49);
    let wanted = wanted(&levels, &allowed);
    let all: usize =
        (0..levels.len()).map(|a| (a + 1..levels.len()).map(|b| levels[a] * levels[b]).sum::<usize>()).sum();
    assert_eq!(wanted.len(), all - 4, "the four refused pairs are not wanted");
    for pair in &wanted {
        assert!(rows.iter().any(|row| holds(row, *pair)), "{pair:?} is in no row");
    }
    for row in &rows {
        let row: Vec<Option<usize>> = row.iter().copied().map(Some).collect();
        assert!(allowed(&row), "{row:?}");
    }
    assert!(rows.len() >= 40 && rows.len() <= 60, "{} rows", rows.len());
    assert_eq!(rows, pairwise(&levels, &allowed, 49), "the same seed makes the same rows");
}
