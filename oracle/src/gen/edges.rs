//! The edge set of constant operands (issue 13, "Constant operands never hit the
//! folder's edge cases"): the values at which wrapping, sign, shift masking and division
//! traps change behaviour, as classes of one width. The generator draws constant
//! operands from these classes ([`value`]); the statistics map a constant back to its
//! class ([`class_of`]) to count which (operator, width, left class, right class)
//! combinations the generated programs contain.

use tandem_core::ir::Type;

/// The classes, by name. `2^k`, `2^k-1` and `2^k+1` stand for every power of two (and
/// its neighbours) not named on its own.
pub const CLASSES: [&str; 16] =
    ["0", "1", "-1", "min", "max", "min+1", "max-1", "31", "32", "33", "63", "64", "65", "2^k", "2^k-1", "2^k+1"];

/// The value of class `class` (an index into [`CLASSES`]) at width `ty`; `k` picks the
/// power of two of the last three classes (taken modulo the width, at least 1).
pub fn value(ty: Type, class: usize, k: u32) -> i64 {
    let bits = ty.bits();
    let min = if ty == Type::I32 { i32::MIN as i64 } else { i64::MIN };
    let max = if ty == Type::I32 { i32::MAX as i64 } else { i64::MAX };
    let p = 1i64.wrapping_shl(1 + k % (bits - 1));
    let v = match CLASSES[class] {
        "0" => 0,
        "1" => 1,
        "-1" => -1,
        "min" => min,
        "max" => max,
        "min+1" => min + 1,
        "max-1" => max - 1,
        "31" => 31,
        "32" => 32,
        "33" => 33,
        "63" => 63,
        "64" => 64,
        "65" => 65,
        "2^k" => p,
        "2^k-1" => p.wrapping_sub(1),
        _ => p.wrapping_add(1),
    };
    ty.normalize(v)
}

/// The class of constant `v` of type `ty`, if it is in the edge set.
pub fn class_of(ty: Type, v: i64) -> Option<usize> {
    let v = ty.normalize(v);
    for (i, name) in CLASSES.iter().enumerate().take(13) {
        let _ = name;
        if value(ty, i, 0) == v {
            return Some(i);
        }
    }
    let u = if ty == Type::I32 { v as u32 as u64 } else { v as u64 };
    if u.is_power_of_two() {
        Some(13)
    } else if u.wrapping_add(1).is_power_of_two() {
        Some(14)
    } else if u.wrapping_sub(1).is_power_of_two() {
        Some(15)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_values_at_both_widths() {
        // Worked out by hand from the definitions of the classes.
        assert_eq!(value(Type::I32, 3, 0), -0x8000_0000);
        assert_eq!(value(Type::I32, 6, 0), 0x7fff_fffe);
        assert_eq!(value(Type::I64, 5, 0), i64::MIN + 1);
        assert_eq!(value(Type::I32, 13, 4), 32);
        assert_eq!(value(Type::I32, 13, 29), 0x4000_0000);
        assert_eq!(value(Type::I32, 13, 30), -0x8000_0000);
        assert_eq!(value(Type::I64, 14, 40), (1i64 << 41) - 1);
        assert_eq!(value(Type::I32, 15, 2), 9);
    }

    #[test]
    fn every_class_maps_back_to_itself() {
        for ty in [Type::I32, Type::I64] {
            for c in 0..CLASSES.len() {
                for k in [3u32, 9, 20] {
                    let v = value(ty, c, k);
                    let back = class_of(ty, v).unwrap();
                    // A power of two may coincide with a named value (2^5 = 32); then the
                    // named class wins.
                    assert!(back == c || back < 13, "{ty} class {} value {v} came back as {}", CLASSES[c], CLASSES[back]);
                }
            }
        }
        assert_eq!(class_of(Type::I32, 1000), None);
        assert_eq!(class_of(Type::I32, 0xffff_ffff), Some(2));
        assert_eq!(class_of(Type::I32, 255), Some(14));
        assert_eq!(class_of(Type::I64, 257), Some(15));
    }
}
