//! `io::read_npz_bytes` on arbitrary bytes: an `Ok` or an `Err` naming the
//! function, never a panic, an abort or a hang.
#![no_main]

use batchrules::io;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match io::read_npz_bytes(data) {
        Ok(map) => {
            // Every entry's bytes lie in the file, without overlaps.
            let total: usize = map
                .values()
                .map(|t| t.shape().iter().product::<usize>())
                .sum();
            assert!(
                total <= data.len(),
                "{total} elements from {} bytes",
                data.len()
            );
        }
        Err(e) => assert!(e.to_string().starts_with("read_npz_bytes: "), "{e}"),
    }
});
