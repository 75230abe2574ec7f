//! `io::read_npy_bytes` on arbitrary bytes: an `Ok` or an `Err` naming the
//! function, never a panic, an abort or a hang; an `Ok` round-trips.
#![no_main]

use batchrules::io;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match io::read_npy_bytes(data) {
        Ok(t) => {
            let bytes = io::to_npy_bytes(&t).expect("a loaded tensor saves");
            let back = io::read_npy_bytes(&bytes).expect("a saved tensor loads");
            assert_eq!(back.shape(), t.shape());
            assert_eq!(back.dtype(), t.dtype());
        }
        Err(e) => assert!(e.to_string().starts_with("read_npy_bytes: "), "{e}"),
    }
});
