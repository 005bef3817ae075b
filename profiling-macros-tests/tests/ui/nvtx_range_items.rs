// `#[nvtx_range]` on items it cannot wrap.
use profiling_core::nvtx_range;

#[nvtx_range]
struct Decoder;

#[nvtx_range]
impl Decoder {}

trait Decode {
    #[nvtx_range]
    fn decode(&self) -> u32;
}

#[nvtx_range]
async fn fetch() -> u32 {
    1
}

#[nvtx_range]
pub const fn table_size() -> usize {
    4
}

fn main() {
    let _ = Decoder;
    let _ = fetch();
    let _ = table_size();
    let _ = <Decoder as Decode>::decode;
}

impl Decode for Decoder {
    fn decode(&self) -> u32 {
        0
    }
}
