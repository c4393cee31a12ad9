//! The IA-32 general registers the backend allocates, and sets of them.
//!
//! `eax ecx edx` are caller-saved (helpers clobber them); `ebx esi edi` are callee-saved
//! and belong to the global allocator first (`seeds/local-regalloc.txt`: "The global
//! register allocator uses callee-saved register"); the ones it leaves unused join the
//! local allocator's pool and are saved in the prologue when used. `ebp` is the frame
//! pointer and `esp` the stack pointer; neither is ever allocated.

use iced_x86::Register;
use std::fmt;

/// An allocatable register.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Reg {
    Eax,
    Ecx,
    Edx,
    Ebx,
    Esi,
    Edi,
}

impl Reg {
    pub const ALL: [Reg; 6] = [Reg::Eax, Reg::Ecx, Reg::Edx, Reg::Ebx, Reg::Esi, Reg::Edi];
    pub const CALLEE_SAVED: [Reg; 3] = [Reg::Ebx, Reg::Esi, Reg::Edi];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The 32-bit iced register.
    pub fn r32(self) -> Register {
        match self {
            Reg::Eax => Register::EAX,
            Reg::Ecx => Register::ECX,
            Reg::Edx => Register::EDX,
            Reg::Ebx => Register::EBX,
            Reg::Esi => Register::ESI,
            Reg::Edi => Register::EDI,
        }
    }

    /// The 16-bit iced register.
    pub fn r16(self) -> Register {
        match self {
            Reg::Eax => Register::AX,
            Reg::Ecx => Register::CX,
            Reg::Edx => Register::DX,
            Reg::Ebx => Register::BX,
            Reg::Esi => Register::SI,
            Reg::Edi => Register::DI,
        }
    }

    /// The low byte register; only `eax ecx edx ebx` have one (see [`RegSet::BYTE`]).
    pub fn r8(self) -> Register {
        match self {
            Reg::Eax => Register::AL,
            Reg::Ecx => Register::CL,
            Reg::Edx => Register::DL,
            Reg::Ebx => Register::BL,
            Reg::Esi | Reg::Edi => panic!("{self} has no byte register"),
        }
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reg::Eax => "eax",
            Reg::Ecx => "ecx",
            Reg::Edx => "edx",
            Reg::Ebx => "ebx",
            Reg::Esi => "esi",
            Reg::Edi => "edi",
        })
    }
}

/// A set of registers (bit `i` is `Reg::ALL[i]`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct RegSet(pub u8);

impl RegSet {
    pub const ALL: RegSet = RegSet(0b11_1111);
    pub const NONE: RegSet = RegSet(0);
    /// Registers with a low byte form (`setcc`, byte stores).
    pub const BYTE: RegSet = RegSet(0b00_1111);
    /// What a call clobbers.
    pub const CALLER_SAVED: RegSet = RegSet(0b00_0111);

    pub fn of(r: Reg) -> RegSet {
        RegSet(1 << r.index())
    }
    pub fn contains(self, r: Reg) -> bool {
        self.0 & (1 << r.index()) != 0
    }
    pub fn with(self, r: Reg) -> RegSet {
        RegSet(self.0 | (1 << r.index()))
    }
    pub fn without(self, r: Reg) -> RegSet {
        RegSet(self.0 & !(1 << r.index()))
    }
    pub fn minus(self, o: RegSet) -> RegSet {
        RegSet(self.0 & !o.0)
    }
    pub fn and(self, o: RegSet) -> RegSet {
        RegSet(self.0 & o.0)
    }
    pub fn union(self, o: RegSet) -> RegSet {
        RegSet(self.0 | o.0)
    }
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The registers of the set in the order of [`Reg::ALL`].
    pub fn iter(self) -> RegSetIter {
        RegSetIter(self.0 & RegSet::ALL.0)
    }
}

/// The registers of a [`RegSet`], lowest bit first: a bit scan per register in the set,
/// not a test of all six (the allocator and its checker walk sets at every node, most of
/// them empty or of one register).
#[derive(Clone, Copy, Debug)]
pub struct RegSetIter(u8);

impl Iterator for RegSetIter {
    type Item = Reg;

    fn next(&mut self) -> Option<Reg> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        // Clears the lowest set bit.
        self.0 &= self.0 - 1;
        Some(Reg::ALL[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bit scan gives the registers a test of each of `Reg::ALL` gives, in that
    /// order, for every byte (bits above the six registers are no members).
    #[test]
    fn iter_gives_the_members_in_register_order() {
        for bits in 0..=u8::MAX {
            let s = RegSet(bits);
            let want: Vec<Reg> = Reg::ALL.into_iter().filter(|r| s.contains(*r)).collect();
            assert_eq!(s.iter().collect::<Vec<Reg>>(), want, "set {bits:#010b}");
            assert_eq!(s.iter().count() as u32, s.and(RegSet::ALL).len());
        }
    }
}
