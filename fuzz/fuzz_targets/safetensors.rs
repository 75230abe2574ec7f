//! `io::read_safetensors_bytes` on arbitrary bytes: an `Ok` or an `Err`
//! naming the function, never a panic, an abort or a hang; an `Ok`
//! round-trips.
#![no_main]

use batchrules::io;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match io::read_safetensors_bytes(data) {
        // A tensor named "" loads, but the writer needs a name per leaf.
        Ok(map) if map.contains_key("") => {}
        Ok(map) => {
            let bytes = io::to_safetensors_bytes(&map).expect("loaded tensors save");
            let back = io::read_safetensors_bytes(&bytes).expect("saved tensors load");
            assert_eq!(back.len(), map.len());
        }
        Err(e) => assert!(e.to_string().starts_with("read_safetensors_bytes: "), "{e}"),
    }
});
