use crate::alloc::{self, Counting};
use crate::rng::{Rng, XorShift64};

// The unit tests of this crate run with the counting allocator installed.
#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn xorshift64_star_sequence_is_the_published_one() {
    // The first outputs for seed 1 (Vigna's xorshift64*), and for the seed the detect tests use:
    // the tests that take these generators rely on their exact sequences.
    let mut r = Rng::new(1);
    assert_eq!([r.next_u64(), r.next_u64(), r.next_u64()], [0x47e4_ce4b_896c_dd1d, 0xabcf_a6a8_e079_651d, 0xb9d1_0d8f_eb73_1f57]);
    let mut r = Rng::new(0x9E37_79B9_7F4A_7C15);
    assert_eq!([r.next_u64(), r.next_u64(), r.next_u64()], [0x0d83_b3e2_9a21_487a, 0x54c4_4c79_f1fe_9d67, 0xa845_f342_007a_0e78]);
}

#[test]
fn xorshift64_sequence_is_marsaglias() {
    let mut r = XorShift64::new(1);
    assert_eq!([r.next_u64(), r.next_u64(), r.next_u64()], [0x4082_2041, 0x1000_4106_0c01_1441, 0x9b1e_842f_6e86_2629]);
    let mut r = XorShift64::new(0x9E37_79B9_7F4A_7C15);
    assert_eq!([r.next_u64(), r.next_u64(), r.next_u64()], [0xdc1b_77ae_0bf3_4dad, 0x64f0_eeb9_026e_6076, 0x7b07_ce91_e590_6136]);
}

#[test]
fn below_pick_and_chance_each_take_one_output() {
    let (mut a, mut b) = (Rng::new(7), Rng::new(7));
    for n in 1..200usize {
        let x = b.next_u64();
        assert_eq!(a.below(n), (x % n as u64) as usize);
        let xs: Vec<usize> = (0..n).map(|i| i * 3).collect();
        let x = b.next_u64();
        assert_eq!(a.pick(&xs), xs[(x % n as u64) as usize]);
        let x = b.next_u64();
        assert_eq!(a.chance(n as u64 % 101), x % 100 < n as u64 % 101);
    }
}

#[test]
#[should_panic(expected = "non-zero seed")]
fn zero_seed_is_refused() {
    let _ = Rng::new(0);
}

#[test]
fn allocations_are_counted_per_thread_and_in_total() {
    alloc::assert_installed();
    let (t0, all0) = (alloc::this_thread(), alloc::total());
    let mut v: Vec<u64> = Vec::with_capacity(4);
    v.extend(std::hint::black_box([1, 2, 3, 4, 5])); // grows: one realloc
    let z = std::hint::black_box(vec![0u8; 64]); // alloc_zeroed
    let n = alloc::this_thread() - t0;
    assert_eq!(n, 3, "alloc, realloc, alloc_zeroed");
    assert!(alloc::total() - all0 >= n);
    let t1 = alloc::this_thread();
    drop((v, z));
    assert_eq!(alloc::this_thread(), t1, "freeing counts nothing");
    // Another thread's allocation counts for that thread and in the total.
    let all1 = alloc::total();
    let other = std::thread::spawn(|| {
        let before = alloc::this_thread();
        drop(std::hint::black_box(Box::new([0u8; 32])));
        alloc::this_thread() - before
    })
    .join()
    .unwrap();
    assert_eq!(other, 1);
    assert!(alloc::total() - all1 >= 1);
}

#[test]
fn joined_draws_the_count_then_each_part() {
    let parts = ["a", "bc", "'", " or ", "1=1"];
    let (mut a, mut b) = (XorShift64::new(0x2545_F491_4F6C_DD1D), XorShift64::new(0x2545_F491_4F6C_DD1D));
    let mut lens = [0usize; 9];
    for _ in 0..2_000 {
        let got = a.joined(&parts, 8);
        let n = 1 + (b.next_u64() % 8) as usize;
        let want: String = (0..n).map(|_| parts[(b.next_u64() % parts.len() as u64) as usize]).collect();
        assert_eq!(got, want);
        lens[n] += 1;
    }
    // Every count from 1 to 8 occurs, and no other.
    assert_eq!(lens[0], 0);
    assert!(lens[1..].iter().all(|&c| c > 0), "{lens:?}");
}
