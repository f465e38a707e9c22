use super::*;
use proptest::prelude::*;

/// A vocabulary over `a`–`d` (and every other byte as itself) with merges
/// that overlap and compete, in rank order.
fn toy(ignore_merges: bool) -> ByteBpe {
    engine(&toy_tables(), ignore_merges)
}

type Tables = (Vec<(Vec<u8>, u32)>, Vec<[u32; 3]>);

/// The engine of `tables`.
fn engine((vocab, merges): &Tables, ignore_merges: bool) -> ByteBpe {
    ByteBpe::build(
        vocab.iter().map(|(t, i)| (t.as_slice(), *i)),
        merges,
        ignore_merges,
    )
    .unwrap()
}

/// Vocabulary ids are not packed in a pair's code: ids past 2^20 encode as
/// the reference does.
#[test]
fn large_vocabulary_ids_equal_the_reference() {
    let (vocab, merges) = toy_tables();
    let shift = |i: u32| i + (1 << 20);
    let vocab: Vec<(Vec<u8>, u32)> = vocab.into_iter().map(|(t, i)| (t, shift(i))).collect();
    let merges: Vec<[u32; 3]> = merges.into_iter().map(|m| m.map(shift)).collect();
    let bpe = ByteBpe::build(
        vocab.iter().map(|(t, i)| (t.as_slice(), *i)),
        &merges,
        false,
    )
    .unwrap();
    for word in [&b"abcd"[..], b"aaaaab", b"dabcdab", b"zz"] {
        assert_eq!(encode(&bpe, word), reference(&vocab, &merges, word));
    }
}

/// A product merged at two ranks with another product's first merge
/// between them: codes cannot order as the ranks (invariant
/// *code-orders-as-rank*), so no engine is built (the caller's general
/// path encodes) rather than wrong ids.
#[test]
fn codes_that_do_not_order_as_ranks_build_no_engine() {
    let mut vocab: Vec<(Vec<u8>, u32)> = (0u8..=255).map(|b| (vec![b], u32::from(b))).collect();
    for (i, t) in ["ab", "bc", "cd", "abc"].iter().enumerate() {
        vocab.push((t.as_bytes().to_vec(), 256 + i as u32));
    }
    let (a, b, c, d) = (97, 98, 99, 100);
    let (ab, bc, cd, abc) = (256, 257, 258, 259);
    let build = |merges: &[[u32; 3]]| {
        ByteBpe::build(vocab.iter().map(|(t, i)| (t.as_slice(), *i)), merges, false)
    };
    // `abc`'s two merges in a row: the codes order as the ranks.
    let merges = [
        [b, c, bc],
        [a, b, ab],
        [a, bc, abc],
        [ab, c, abc],
        [c, d, cd],
    ];
    let bpe = build(&merges).unwrap();
    for word in [&b"abcd"[..], b"abc", b"cdabc"] {
        assert_eq!(encode(&bpe, word), reference(&vocab, &merges, word));
    }
    // `cd`'s first merge between them: no code order is the rank order.
    let merges = [
        [b, c, bc],
        [a, b, ab],
        [a, bc, abc],
        [c, d, cd],
        [ab, c, abc],
    ];
    assert!(build(&merges).is_none());
}

fn toy_tables() -> Tables {
    let mut vocab: Vec<(Vec<u8>, u32)> = (0u8..=255).map(|b| (vec![b], u32::from(b))).collect();
    let mut merges = Vec::new();
    let mut add = |vocab: &mut Vec<(Vec<u8>, u32)>, l: &[u8], r: &[u8]| {
        let id =
            |v: &Vec<(Vec<u8>, u32)>, t: &[u8]| v.iter().find(|(s, _)| s == t).map(|&(_, i)| i);
        let (li, ri) = (id(vocab, l).unwrap(), id(vocab, r).unwrap());
        let joined = [l, r].concat();
        let mi = match id(vocab, &joined) {
            Some(i) => i,
            None => {
                let i = vocab.len() as u32;
                vocab.push((joined, i));
                i
            }
        };
        merges.push([li, ri, mi]);
    };
    for (l, r) in [
        ("a", "b"),
        ("b", "c"),
        ("c", "d"),
        ("ab", "c"),
        ("a", "a"),
        ("aa", "a"),
        ("bc", "d"),
        ("d", "a"),
        ("ab", "cd"),
        ("da", "b"),
        ("aa", "aa"),
        ("cd", "ab"),
    ] {
        add(&mut vocab, l.as_bytes(), r.as_bytes());
    }
    // An entry no merge forms.
    let i = vocab.len() as u32;
    vocab.push((b"dd".to_vec(), i));
    // A pair listed twice: its last rank counts.
    merges.push(merges[0]);
    // Byte ids that are not the bytes: ids shifted by 1000.
    let vocab = vocab.into_iter().map(|(t, i)| (t, i + 1000)).collect();
    let merges = merges.into_iter().map(|m| m.map(|i| i + 1000)).collect();
    (vocab, merges)
}

/// The merge as the reference states it, from scratch each step, on the
/// vocabulary's own ids and merges.
fn reference(vocab: &[(Vec<u8>, u32)], merges: &[[u32; 3]], word: &[u8]) -> Vec<u32> {
    let id_of = |t: &[u8]| vocab.iter().find(|(s, _)| s == t).map(|&(_, i)| i).unwrap();
    let mut ids: Vec<u32> = word.iter().map(|&b| id_of(&[b])).collect();
    loop {
        let best = (0..ids.len().saturating_sub(1))
            .filter_map(|i| {
                merges
                    .iter()
                    .enumerate()
                    .rev()
                    .find(|(_, m)| m[0] == ids[i] && m[1] == ids[i + 1])
                    .map(|(rank, m)| (rank, i, m[2]))
            })
            .min();
        let Some((_, i, m)) = best else { return ids };
        ids[i] = m;
        ids.remove(i + 1);
    }
}

fn encode(bpe: &ByteBpe, word: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    bpe.encode_word(word, &mut out);
    out
}

#[test]
fn whole_entries_only_with_ignore_merges() {
    let (plain, whole) = (toy(false), toy(true));
    // `dd` is an entry no merge forms: taken whole only with ignore_merges.
    let d = 1000 + u32::from(b'd');
    assert_eq!(encode(&plain, b"dd"), vec![d, d]);
    assert_eq!(encode(&plain, b"dd"), vec![d, d], "remembered");
    assert_eq!(encode(&whole, b"dd").len(), 1);
    let (vocab, merges) = toy_tables();
    assert_eq!(encode(&plain, b"abcd"), reference(&vocab, &merges, b"abcd"));
}

#[test]
fn rebuilds_runs_the_merge_even_where_entries_are_taken_whole() {
    // The CJK cuts ask whether the merges form an entry; with
    // `ignore_merges` the probe's flag only says the entry is its answer.
    for bpe in [toy(false), toy(true)] {
        assert!(!bpe.rebuilds(b"dd"));
        assert!(bpe.rebuilds(b"ab"));
        assert!(!bpe.rebuilds(b"zz"), "no entry");
    }
}

#[test]
fn a_long_word_is_never_a_short_one_in_the_word_table() {
    // A 272-byte word has the length 16 modulo 256 and the first and last
    // eight bytes of the 16-byte word before it; a 271-byte one the length
    // 15 modulo 256: the word table, whose keys keep the length in a byte,
    // must answer neither.
    let bpe = toy(false);
    let (vocab, merges) = toy_tables();
    let short = b"abcdxxxxxxxxabcd".to_vec();
    let mut long = short[..8].to_vec();
    long.resize(264, b'x');
    long.extend_from_slice(&short[8..]);
    assert_eq!(long.len(), 272);
    let fifteen = short[..15].to_vec();
    let mut long15 = fifteen[..8].to_vec();
    long15.resize(264, b'x');
    long15.extend_from_slice(&fifteen[8..]);
    assert_eq!(long15.len(), 271);
    for word in [
        &short, &long, &short, &long, &fifteen, &long15, &fifteen, &long15,
    ] {
        assert_eq!(encode(&bpe, word), reference(&vocab, &merges, word));
    }
}

#[test]
fn a_missing_byte_builds_nothing() {
    let vocab: Vec<(Vec<u8>, u32)> = (0u8..255).map(|b| (vec![b], u32::from(b))).collect();
    assert!(ByteBpe::build(vocab.iter().map(|(t, i)| (t.as_slice(), *i)), &[], false).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Short words (linear merge), long ones (heap), cached and not, seen
    /// twice: always the reference's ids.
    #[test]
    fn equals_the_reference(word in proptest::collection::vec(prop_oneof![
        Just(b'a'), Just(b'b'), Just(b'c'), Just(b'd'), Just(b'x')], 0..120)) {
        let bpe = toy(false);
        let (vocab, merges) = toy_tables();
        let want = reference(&vocab, &merges, &word);
        prop_assert_eq!(&encode(&bpe, &word), &want);
        prop_assert_eq!(&encode(&bpe, &word), &want);
    }

    /// Many words in one call, more than a chunk of them, some repeated,
    /// some empty or out of the text, near its end (a key read there cannot
    /// take 16 bytes): the reference's ids, word after word, on a fresh
    /// engine and a warm one.
    #[test]
    fn many_ranges_in_one_call(
        text in proptest::collection::vec(prop_oneof![
            Just(b'a'), Just(b'b'), Just(b'c'), Just(b'd'), Just(b'x')], 1..200),
        cuts in proptest::collection::vec((0usize..220, 0usize..40), 0..700),
        ignore_merges in any::<bool>(),
    ) {
        let bpe = toy(ignore_merges);
        let (vocab, merges) = toy_tables();
        let whole = |w: &[u8]| ignore_merges
            && vocab.iter().any(|(t, _)| t.as_slice() == w);
        let ranges: Vec<(usize, usize)> = cuts.iter().map(|&(s, n)| (s, s + n)).collect();
        let mut want = Vec::new();
        for &(s, e) in &ranges {
            let Some(word) = text.get(s..e) else { continue };
            if word.is_empty() {
                continue;
            }
            if whole(word) {
                want.push(vocab.iter().find(|(t, _)| t.as_slice() == word).unwrap().1);
            } else {
                want.extend(reference(&vocab, &merges, word));
            }
        }
        for _ in 0..2 {
            let mut got: Vec<u32> = Vec::new();
            bpe.encode_ranges(&text, ranges.iter().copied(), &mut got);
            prop_assert_eq!(&got, &want);
        }
    }
}

/// Letters `a`–`z` and every other byte as itself; every pair of letters
/// merges (676 products, most past the grid's 512 internal ids), then 400
/// pairs of those products: merged words ask the pair table and its filter
/// for pairs it holds and pairs it does not.
fn large_tables() -> Tables {
    let mut vocab: Vec<(Vec<u8>, u32)> = (0u8..=255).map(|b| (vec![b], u32::from(b))).collect();
    let mut merges = Vec::new();
    let mut two = Vec::new();
    for x in b'a'..=b'z' {
        for y in b'a'..=b'z' {
            let id = vocab.len() as u32;
            vocab.push((vec![x, y], id));
            merges.push([u32::from(x), u32::from(y), id]);
            two.push(id);
        }
    }
    for i in 0..400 {
        let (l, r) = (two[i], two[(i * 7 + 300) % two.len()]);
        let text = [vocab[l as usize].0.clone(), vocab[r as usize].0.clone()].concat();
        if vocab.iter().any(|(t, _)| *t == text) {
            continue;
        }
        let id = vocab.len() as u32;
        vocab.push((text, id));
        merges.push([l, r, id]);
    }
    (vocab, merges)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// Pairs of ids past the grid: the reference's ids, cold and warm.
    #[test]
    fn pairs_past_the_grid_equal_the_reference(
        word in proptest::collection::vec(b'a'..=b'z', 0..40),
    ) {
        let (vocab, merges) = large_tables();
        let bpe = ByteBpe::build(vocab.iter().map(|(t, i)| (t.as_slice(), *i)), &merges, false)
            .unwrap();
        let want = reference(&vocab, &merges, &word);
        prop_assert_eq!(&encode(&bpe, &word), &want);
        prop_assert_eq!(&encode(&bpe, &word), &want);
    }
}

/// Four CJK chars, two Cyrillic letters and `a`, `b`, `q`, `x`, `y`, `z`
/// (every other byte as itself):
/// `中` and `国` form alone and join later (atoms); `x` joins the lead byte
/// of `人` before `人` forms (a head), `y` the last byte of `中` (a tail);
/// `大` takes part in a merge that ranks below its own last one (no atom).
fn cjk_tables() -> Tables {
    let mut vocab: Vec<(Vec<u8>, u32)> = (0u8..=255).map(|b| (vec![b], u32::from(b))).collect();
    let mut merges = Vec::new();
    let mut add = |l: &[u8], r: &[u8]| {
        let id =
            |v: &Vec<(Vec<u8>, u32)>, t: &[u8]| v.iter().find(|(s, _)| s == t).map(|&(_, i)| i);
        let mut entry = |t: Vec<u8>| {
            id(&vocab, &t).unwrap_or_else(|| {
                let i = vocab.len() as u32;
                vocab.push((t, i));
                i
            })
        };
        let (li, ri, mi) = (entry(l.to_vec()), entry(r.to_vec()), entry([l, r].concat()));
        merges.push([li, ri, mi]);
    };
    let (zhong, guo, ren, da) = (
        "中".as_bytes(),
        "国".as_bytes(),
        "人".as_bytes(),
        "大".as_bytes(),
    );
    add(&zhong[..1], &zhong[1..2]);
    add(&zhong[2..], b"y");
    add(&zhong[..2], &zhong[2..]);
    add(&guo[..1], &guo[1..2]);
    add(&guo[..2], &guo[2..]);
    add(zhong, guo);
    add(b"x", &ren[..1]);
    add(&ren[1..2], &ren[2..]);
    add(&ren[..1], &ren[1..]);
    add(&da[1..2], &da[2..]);
    add(da, b"a");
    // Below `大`'s last merge: `大ab` merged from its bytes joins `ab`
    // first, and started as `大` it would join `大a`.
    add(b"a", b"b");
    add(&da[..1], &da[1..]);
    add(ren, zhong);
    // Two-byte letters: `z` joins the lead byte of `а` before `а` forms (a
    // head), `q` the last byte of `д` (a tail).
    let (de, a) = ("д".as_bytes(), "а".as_bytes());
    add(b"z", &a[..1]);
    add(&de[1..], b"q");
    add(&de[..1], &de[1..]);
    add(&a[..1], &a[1..]);
    add(de, a);
    add(b"b", &da[..1]);
    (vocab, merges)
}

fn cjk() -> ByteBpe {
    engine(&cjk_tables(), false)
}

#[test]
fn atoms_start_whole_only_where_the_argument_holds() {
    let bpe = cjk();
    let atoms = bpe.atoms.as_ref().expect("中, 国 and 人 are atoms");
    let mut start = Vec::new();
    let count = |text: &str, start: &mut Vec<u32>| {
        atoms.symbols(text.as_bytes(), start);
        start.len()
    };
    assert_eq!(count("中国", &mut start), 2);
    assert_eq!(count("人", &mut start), 1);
    assert_eq!(count("x人", &mut start), 4, "a head before 人");
    assert_eq!(count("中y", &mut start), 4, "a tail after 中");
    assert_eq!(count("中x", &mut start), 2);
    assert_eq!(count("大", &mut start), 3, "大 is no atom");
    assert!(!atoms.symbols("大a".as_bytes(), &mut start));
    assert_eq!(count("да", &mut start), 2);
    assert_eq!(count("zа", &mut start), 3, "a head before а");
    assert_eq!(count("дq", &mut start), 3, "a tail after д");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    /// Words of atoms, heads, tails and a char that is no atom, short and
    /// long (heap): the reference's ids, merged from the bytes.
    #[test]
    fn atoms_merge_as_bytes(parts in proptest::collection::vec(prop_oneof![
        Just("中"), Just("国"), Just("人"), Just("大"), Just("a"), Just("b"), Just("x"),
        Just("y"), Just("д"), Just("а"), Just("z"), Just("q")], 0..40)) {
        let bpe = cjk();
        let (vocab, merges) = cjk_tables();
        let word = parts.concat();
        let want = reference(&vocab, &merges, word.as_bytes());
        prop_assert_eq!(&encode(&bpe, word.as_bytes()), &want);
    }
}

/// Chunks of exactly, one under and one past [`CHUNK`] words, with long
/// words new in a chunk and met again in the same chunk and in later ones
/// (the word cache's pass ahead of the merges, then the merges' own
/// probes), and short words new and met again: the reference's ids, on a
/// fresh engine and on a warm one.
#[test]
fn chunk_edges_and_long_words_met_again_equal_the_reference() {
    let (vocab, merges) = large_tables();
    let bpe = ByteBpe::build(
        vocab.iter().map(|(t, i)| (t.as_slice(), *i)),
        &merges,
        false,
    )
    .unwrap();
    let words: Vec<&[u8]> = vec![
        b"abcdefghijklmnopqrstu",
        b"ab",
        b"zyxwvutsrqponmlkjihgfe",
        b"abcdefghijklmnopqrstu",
        b"qqqq",
        b"mnbvcxzlkjhgfdsapoiuytrewq",
    ];
    for count in [CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 2 * CHUNK + 3] {
        let mut text = Vec::new();
        let mut ranges = Vec::new();
        let mut want = Vec::new();
        for i in 0..count {
            let word = words[i % words.len()];
            ranges.push((text.len(), text.len() + word.len()));
            text.extend_from_slice(word);
            want.extend(reference(&vocab, &merges, word));
        }
        for fresh in [true, false] {
            let engine;
            let bpe = if fresh {
                engine = ByteBpe::build(
                    vocab.iter().map(|(t, i)| (t.as_slice(), *i)),
                    &merges,
                    false,
                )
                .unwrap();
                &engine
            } else {
                &bpe
            };
            let mut got: Vec<u32> = Vec::new();
            bpe.encode_ranges(&text, ranges.iter().copied(), &mut got);
            assert_eq!(got, want, "{count} words, fresh engine: {fresh}");
        }
    }
}
