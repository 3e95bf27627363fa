// The Rust case of the walker suite: recursion 40 deep through a generic
// function, then a leaf that spins until killed.
use std::hint::black_box;

#[inline(never)]
fn leaf(x: u64) -> u64 {
    let mut s = x;
    loop {
        for i in 0..1000u64 {
            s = black_box(s.wrapping_mul(31).wrapping_add(i));
        }
        if black_box(s) == 42 {
            return s;
        }
    }
}

#[inline(never)]
fn level<T: Into<u64> + Copy>(n: u32, t: T) -> u64 {
    let buf = black_box([n as u8; 48]);
    let r = if n == 0 { leaf(t.into()) } else { level(n - 1, t) };
    r + buf[(n % 48) as usize] as u64
}

fn main() {
    println!("{}", level(40, 7u32));
}
