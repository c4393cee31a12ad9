//! Unit tests of the backend passes without an emulator: the LIR validator catches each
//! of the seed's four properties, every pass fires (its statistics say so), the local
//! allocator makes the decisions of `seeds/local-regalloc.txt`'s examples (expected
//! states copied from the seed's tables), and the emitted bytes decode to the expected
//! instruction shapes.

use iced_x86::{Decoder, DecoderOptions, Formatter, Instruction, IntelFormatter, Mnemonic, OpKind, Register};
use tandem_core::abi::{helper_address, RuntimeHelper, CODE_BASE};
use tandem_core::backend::lir::{validate, Args, LirBlock, LirFunction, Op, Use, VarKind};
use tandem_core::backend::regalloc::{regalloc, Allocation, RegallocOptions};
use tandem_core::backend::x86::RegSet;
use tandem_core::backend::{compile, compile_staged, decompose, lower, rationalize, CompileError};
use tandem_core::helpers::HelperKind;
use tandem_core::ir::{Block, Function, Type, CALLFRAME_BASE};
use tandem_core::text::parse_module;

fn func(src: &str) -> Function {
    let (m, _) = parse_module(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    m.functions.into_iter().next().unwrap()
}

/// Runs the LIR passes and the allocator with only `eax ecx edx` and no global
/// allocation: the three-register world of the seed's tables.
fn allocate_like_the_seed(src: &str) -> (LirFunction, Allocation) {
    let f = func(src);
    let (l, _) = rationalize::rationalize(&f).unwrap();
    let (mut l, _) = decompose::decompose(&l);
    lower::lower(&mut l);
    validate(&l).unwrap();
    let opts = RegallocOptions { global: false, local_pool: RegSet::CALLER_SAVED, trace: true };
    let a = regalloc(&l, opts).unwrap();
    (l, a)
}

/// The decisions as `(step, "eax ecx edx")` strings.
fn decisions(a: &Allocation) -> Vec<(String, String)> {
    a.decisions.iter().map(|(s, st)| (s.clone(), st.join(" "))).collect()
}

/// The state after the first decision whose text starts with `prefix`, searching from
/// index `from`; returns its index too.
fn state_after(d: &[(String, String)], from: usize, prefix: &str) -> (usize, String) {
    let i = d[from..]
        .iter()
        .position(|(s, _)| s.starts_with(prefix))
        .unwrap_or_else(|| panic!("no step {prefix:?} after {from} in {d:#?}"))
        + from;
    (i, d[i].1.clone())
}

fn decode(bytes: &[u8]) -> Vec<Instruction> {
    Decoder::with_ip(32, bytes, CODE_BASE as u64, DecoderOptions::NONE).into_iter().collect()
}

fn text(i: &Instruction) -> String {
    let mut s = String::new();
    IntelFormatter::new().format(i, &mut s);
    s
}

fn listing(ins: &[Instruction]) -> String {
    ins.iter().map(|i| text(i) + "\n").collect()
}

// ---- The seed's examples -------------------------------------------------------------

/// Seed example 1: `store (local1, shl (local1, call (some_arg)))`. The table:
///
/// ```text
/// eax = load local1     mov  free free
/// spill eax             free free free
/// call                  mov  free free
/// mov %eax -> %ecx      free busy free
/// un-spill              mov  busy free
/// shl %cl, %eax         mov  free free
/// ```
#[test]
fn seed_example_spill_around_a_call_and_force_into_ecx() {
    let src = "helper @heap_rmw(i32, i32) -> i32 effects(reads_heap, writes_heap)\n\
               function %f() -> i32 {\n    local i32 %local1\nb0:\n    \
               %local1 = shl(%local1, call @heap_rmw(0, 0))\n    ret %local1\n}\n";
    let (_, a) = allocate_like_the_seed(src);
    let d = decisions(&a);
    let (i, s) = state_after(&d, 0, "eax = read");
    assert_eq!(s, "mov free free");
    let (i, s) = state_after(&d, i, "spill eax");
    assert_eq!(s, "free free free");
    let (i, s) = state_after(&d, i, "eax = call");
    assert_eq!(s, "mov free free");
    let (i, _) = state_after(&d, i, "mov %eax -> %ecx");
    let (i, s) = state_after(&d, i, "force ecx");
    assert_eq!(s, "free busy free");
    let (i, s) = state_after(&d, i, "un-spill eax");
    assert_eq!(s, "mov busy free");
    let (_, s) = state_after(&d, i, "eax = shl");
    assert_eq!(s, "mov free free");
    assert_eq!(a.stats.spills, 1);
    assert_eq!(a.stats.unspills, 1);
    // The resulting x86 code of the seed, in Intel syntax: load, spill, call, move the
    // call's result to ecx, reload, shift by cl.
    let f = func(src);
    let (l, _) = rationalize::rationalize(&f).unwrap();
    let (mut l, _) = decompose::decompose(&l);
    lower::lower(&mut l);
    let code = tandem_core::backend::emit::emit(&l, &a).unwrap();
    let ins = decode(&code.bytes);
    let body: Vec<String> = ins.iter().map(text).collect();
    let at = |pat: &str, from: usize| -> usize {
        body[from..].iter().position(|t| t.starts_with(pat)).unwrap_or_else(|| panic!("{pat} after {from}:\n{}", listing(&ins))) + from
    };
    let load = at("mov eax,[ebp-", 0);
    let spill = at("mov [ebp-", load + 1);
    let call = at("call", spill + 1);
    assert_eq!(body[call + 1], "mov ecx,eax", "{}", listing(&ins));
    let slot = body[spill].trim_start_matches("mov ").split(',').next().unwrap().to_string();
    assert_eq!(body[call + 2], format!("mov eax,{slot}"), "{}", listing(&ins));
    assert_eq!(body[call + 3], "shl eax,cl", "{}", listing(&ins));
}

/// The seed's question: "What happens when a register that we need to allocate with
/// get_register_force () contains an operand for the next instruction?" With `eax` and
/// `ecx` moveable and `edx` free, forcing `ecx` moves its value to `edx` ("The first
/// option is way better") instead of spilling it.
#[test]
fn seed_example_force_moves_an_operand_out_of_ecx() {
    // `%t = %q` leaves eax freeable with %t's value, so `%b` is read into ecx (a free
    // register is preferred to a freeable one) and the read of `%t` reuses eax: then
    // eax holds the count, ecx the shifted value, as in the seed's table.
    let src = "function %f(i32 %q, i32 %b) -> i32 {\n    local i32 %t\nb0:\n    %t = %q\n    ret shl(%b, %t)\n}\n";
    let (_, a) = allocate_like_the_seed(src);
    let d = decisions(&a);
    let (i, s) = state_after(&d, 0, "ecx = read");
    assert_eq!(s, "freeable mov free");
    let (i, s) = state_after(&d, i, "eax = read");
    assert_eq!(s, "mov mov free", "the read of %t reuses eax: {d:#?}");
    let (i, s) = state_after(&d, i, "mov %ecx -> %edx");
    assert_eq!(s, "mov free mov");
    let (_, s) = state_after(&d, i, "force ecx");
    assert_eq!(s, "free busy mov");
    assert_eq!(a.stats.spills, 0);
    assert_eq!(a.stats.reused, 1);
}

/// Seed example 3: `store (local1, div (local1, local2))`. The dividend goes to `eax`,
/// `edx` is set (busy) for `idiv`, and afterwards only `eax` holds the quotient:
///
/// ```text
/// force mov %ecx, %eax  busy free free
/// set %edx              busy free busy
/// idiv                  mov  free free
/// ```
/// "edx is set to free after idiv, because the modulus is not needed (if it was a rem,
/// eax would have been freed)."
#[test]
fn seed_example_division_in_edx_eax() {
    let src = "function %f(i32 %local1, i32 %local2) -> i32 {\nb0:\n    \
               %local1 = sdiv(%local1, %local2)\n    ret %local1\n}\n";
    let (_, a) = allocate_like_the_seed(src);
    let d = decisions(&a);
    let (i, s) = state_after(&d, 0, "set edx");
    assert_eq!(s, "busy free busy");
    let (_, s) = state_after(&d, i, "eax = sdiv");
    assert_eq!(s, "mov free free");
    assert_eq!(a.stats.spills, 0);
    let src_rem = src.replace("sdiv", "srem");
    let (_, a) = allocate_like_the_seed(&src_rem);
    let d = decisions(&a);
    let (i, s) = state_after(&d, 0, "set edx");
    assert_eq!(s, "busy free busy");
    let (_, s) = state_after(&d, i, "edx = srem");
    assert_eq!(s, "free free mov");
    // The code: the dividend loaded into eax, `cdq`, `idiv` by the divisor in memory.
    let code = compile(&func(src)).unwrap();
    let ins = decode(&code.bytes);
    let p = ins.iter().position(|i| i.mnemonic() == Mnemonic::Cdq).expect("cdq");
    assert_eq!(ins[p + 1].mnemonic(), Mnemonic::Idiv, "{}", listing(&ins));
}

/// "If we load the divisor before will_clobber(), we'll have to spill eax and reload it
/// later": a value live across a division that sits in a clobbered register is moved
/// or spilled first, and the result is still right (the emulator tests check values).
#[test]
fn seed_example_value_live_across_division_is_spilled_first() {
    let src = "function %f(i32 %c, i32 %a, i32 %b) -> i32 {\nb0:\n    ret add(%c, sdiv(%a, %b))\n}\n";
    let (_, a) = allocate_like_the_seed(src);
    let d = decisions(&a);
    // %c is read into eax first; the division clobbers eax and edx, ecx holds %a.
    let (i, s) = state_after(&d, 0, "eax = read");
    assert_eq!(s, "mov free free");
    let (i, _) = state_after(&d, i, "spill eax");
    let (i, _) = state_after(&d, i, "will_clobber eax");
    let (i, s) = state_after(&d, i, "set edx");
    assert_eq!(s, "busy free busy");
    let (_, _) = state_after(&d, i, "un-spill");
}

// ---- The LIR validator ----------------------------------------------------------------

fn tiny_lir() -> LirFunction {
    let f = func("function %f(i32 %a) -> i32 {\nb0:\n    ret add(%a, 1)\n}\n");
    rationalize::rationalize(&f).unwrap().0
}

fn errors(l: &LirFunction) -> String {
    validate(l).err().map(|e| e.iter().map(|e| e.to_string() + "\n").collect()).unwrap_or_default()
}

#[test]
fn validator_accepts_rationalized_lir_and_catches_each_property() {
    let ok = tiny_lir();
    validate(&ok).unwrap();
    let b0 = ok.layout[0];
    // n0 = read, n1 = const, n2 = add n0 n1, n3 = ret n2.
    let nodes = ok.blocks[b0].nodes.clone();
    assert_eq!(nodes.len(), 4);
    // 1. The threading has a loop: a node threaded twice.
    let mut l = ok.clone();
    l.blocks[b0] = LirBlock { nodes: vec![nodes[0], nodes[1], nodes[2], nodes[0], nodes[3]] };
    assert!(errors(&l).contains("appears twice"), "{}", errors(&l));
    // 2. A temp used twice.
    let mut l = ok.clone();
    l.nodes[nodes[2]].args = Args::from_slice(&[Use::of(nodes[0]), Use::of(nodes[0])]);
    assert!(errors(&l).contains("already used"), "{}", errors(&l));
    // 3. A use before its def.
    let mut l = ok.clone();
    l.blocks[b0] = LirBlock { nodes: vec![nodes[0], nodes[2], nodes[1], nodes[3]] };
    assert!(errors(&l).contains("before its def"), "{}", errors(&l));
    // 4. A used def that is not in the linear order.
    let mut l = ok.clone();
    l.blocks[b0] = LirBlock { nodes: vec![nodes[0], nodes[2], nodes[3]] };
    assert!(errors(&l).contains("not in this block's linear order"), "{}", errors(&l));
    // And the backend's own shape rule: a block ends in its one terminator.
    let mut l = ok;
    l.blocks[b0] = LirBlock { nodes: vec![nodes[0], nodes[1], nodes[2]] };
    assert!(errors(&l).contains("terminator"), "{}", errors(&l));
}

#[test]
fn validator_looks_through_contained_nodes() {
    // After lowering the address `add(%p, 4)` is contained in the load, and the load's
    // register operand is %p's read, reached through it.
    let f = func("function %f(i32 %p) -> i32 {\nb0:\n    ret load.i32(add(%p, 4))\n}\n");
    let (l, _) = rationalize::rationalize(&f).unwrap();
    let (mut ok, _) = decompose::decompose(&l);
    lower::lower(&mut ok);
    validate(&ok).unwrap();
    let b0 = ok.layout[0];
    let nodes = ok.blocks[b0].nodes.clone();
    let load = *nodes.iter().find(|&&n| matches!(ok.nodes[n].op, Op::Load { .. })).expect("a load");
    let addr = ok.nodes[load].args[0].node;
    assert!(ok.nodes[addr].contained && !ok.nodes[addr].args.is_empty(), "{ok}");
    // The load before the read its address uses.
    let read = ok.nodes[addr].args[0].node;
    let mut l = ok.clone();
    let mut order: Vec<_> = nodes.iter().copied().filter(|&n| n != read).collect();
    let at = order.iter().position(|&n| n == load).unwrap();
    order.insert(at + 1, read);
    l.blocks[b0] = LirBlock { nodes: order };
    assert!(errors(&l).contains(&format!("{addr}: uses {read} before its def")), "{}", errors(&l));
    // The contained address also used by the return.
    let mut l = ok;
    let ret = *nodes.last().unwrap();
    l.nodes[ret].args.push(Use::of(addr));
    assert!(errors(&l).contains(&format!("contains {addr}, which is also elsewhere")), "{}", errors(&l));
}

#[test]
fn validator_catches_a_separated_carry_pair() {
    let f = func("function %f(i64 %a) -> i64 {\nb0:\n    ret add(%a, %a)\n}\n");
    let (l, _) = rationalize::rationalize(&f).unwrap();
    let (mut l, _) = decompose::decompose(&l);
    validate(&l).unwrap();
    let b0 = l.layout[0];
    let list = &mut l.blocks[b0].nodes;
    let lo = list.iter().position(|&n| l.nodes[n].op == Op::AddLo).unwrap();
    list.swap(lo, lo + 1);
    assert!(errors(&l).contains("not immediately followed"), "{}", errors(&l));
}

// ---- Every pass fires -------------------------------------------------------------------

#[test]
fn rationalize_removes_statements_and_commas() {
    let f = func(
        "function %f(i32 %x) -> i32 {\n    local i32 %y\nb0:\n    %y = 3\n    \
         ret add(%x, comma((%x = mul(%x, 3)), sub(%x, comma((%y = %x), %y))))\n}\n",
    );
    let (l, s) = rationalize::rationalize(&f).unwrap();
    validate(&l).unwrap();
    assert_eq!(s.statements, 1);
    assert_eq!(s.commas, 2);
    // One linear sequence: the writes appear in the middle, in evaluation order.
    let ops: Vec<String> = l.blocks[l.layout[0]].nodes.iter().map(|&n| l.node_text(n)).collect();
    let w1 = ops.iter().position(|t| t.starts_with("write v0")).unwrap();
    let w2 = ops.iter().rposition(|t| t.starts_with("write v1 ")).unwrap();
    let first_read_x = ops.iter().position(|t| t == "read v0").unwrap();
    assert!(first_read_x < w1 && w1 < w2, "{ops:#?}");
    // The embedded assignments are no statements any more: only the terminator ends the block.
    assert!(l.nodes[*l.blocks[l.layout[0]].nodes.last().unwrap()].op.is_terminator());
}

#[test]
fn phis_are_refused_with_a_typed_error() {
    let f = func(
        "function %f(i32 %a) -> i32 {\n    local i32 %x\nb0:\n    br %a, b1, b2\nb1:\n    jump b2\n\
         b2:\n    %x = phi(b0: %a, b1: %a)\n    ret %x\n}\n",
    );
    match rationalize::rationalize(&f) {
        Err(CompileError::Phi { block }) => assert_eq!(block, Block::from_u32(2)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn decompose_splits_every_64_bit_value() {
    let f = func(
        "function %f(i64 %a, i64 %b) -> i64 {\n    local i64 %x\nb0:\n    \
         %x = mul(add(%a, %b), shl(%a, %b))\n    ret sdiv(%x, sub(%b, 1:i64))\n}\n",
    );
    let (l, _) = rationalize::rationalize(&f).unwrap();
    let (d, s) = decompose::decompose(&l);
    validate(&d).unwrap();
    assert_eq!(s.split_vars, 3);
    assert_eq!(s.helper_calls, 1);
    assert!(s.temps >= 4);
    assert!(d.vars.values().all(|v| v.ty == Type::I32));
    let ops: Vec<Op> = d.all_nodes().iter().map(|&n| d.nodes[n].op.clone()).collect();
    for want in [Op::AddLo, Op::AddHi, Op::SubLo, Op::SubHi, Op::Shld, Op::MulWide, Op::Call(RuntimeHelper::Sdiv64)] {
        assert!(ops.contains(&want), "{want:?} missing");
    }
    // Parameters keep their incoming slots: the halves of %b are at +8 and +12.
    let kinds: Vec<VarKind> = d.vars.values().map(|v| v.kind).collect();
    assert!(kinds.contains(&VarKind::Param { offset: 12 }));
}

#[test]
fn lower_forms_address_modes_immediates_and_fused_compares() {
    let f = func(
        "helper @log(i32, i32) -> void effects(observable)\n\
         function %f(i32 %p, i32 %i) -> i32 {\nb0:\n    store.32(add(add(%p, shl(%i, 2)), 8), 5)\n    \
         call @log(%p, 1)\n    trapif(eq(%i, 3), 4)\n    br slt(%i, %p), b1, b2\nb1:\n    ret load.i32(add(%p, 12))\nb2:\n    ret 0\n}\n",
    );
    let s = compile_staged(&f).unwrap().stats;
    assert_eq!(s.lower.fused_compares, 2);
    assert_eq!(s.lower.call_args, 2);
    assert!(s.lower.address_modes >= 2, "{:?}", s.lower);
    assert!(s.lower.immediates >= 3, "{:?}", s.lower);
    let code = compile(&f).unwrap();
    let ins = decode(&code.bytes);
    // The store uses [base + index*4 + 8] with an immediate.
    let store = ins
        .iter()
        .find(|i| i.mnemonic() == Mnemonic::Mov && i.op0_kind() == OpKind::Memory && i.memory_index_scale() == 4)
        .unwrap_or_else(|| panic!("{}", listing(&ins)));
    assert_eq!(store.memory_displacement32(), 8);
    assert_eq!(store.op1_kind(), OpKind::Immediate32);
    assert_eq!(store.immediate32(), 5);
    // The check is `cmp; jne skip; mov eax, 4; int 0x41`.
    let int = ins.iter().position(|i| i.mnemonic() == Mnemonic::Int).unwrap();
    assert_eq!(ins[int].immediate8(), 0x41);
    assert_eq!(text(&ins[int - 1]), "mov eax,4");
    assert_eq!(ins[int - 2].mnemonic(), Mnemonic::Jne);
    assert_eq!(ins[int - 3].mnemonic(), Mnemonic::Cmp);
    // The helper is called at its fixed address.
    let call = ins.iter().find(|i| i.mnemonic() == Mnemonic::Call).unwrap();
    assert_eq!(call.near_branch_target(), helper_address(RuntimeHelper::Ir(HelperKind::Log)) as u64);
}

#[test]
fn emitted_code_has_the_cdecl_frame_and_pair_arithmetic() {
    let f = func(
        "function %f(i64 %a, i64 %b) -> i64 {\n    callframe i64 @v\n    local i64 %s\nb0:\n    \
         %s = add(%a, cfread(@v))\n    cfwrite(@v, %s)\n    ret lshr(%s, %b)\n}\n",
    );
    let code = compile(&f).unwrap();
    let ins = decode(&code.bytes);
    let l = listing(&ins);
    assert_eq!(text(&ins[0]), "push ebp", "{l}");
    assert_eq!(text(&ins[1]), "mov ebp,esp", "{l}");
    assert_eq!(ins.last().unwrap().mnemonic(), Mnemonic::Ret, "{l}");
    assert_eq!(text(&ins[ins.len() - 2]), "pop ebp", "{l}");
    // add then adc with nothing but flag-preserving moves between, the callframe at its
    // absolute address (both halves).
    let add = ins.iter().position(|i| i.mnemonic() == Mnemonic::Add).unwrap();
    let adc = ins.iter().position(|i| i.mnemonic() == Mnemonic::Adc).unwrap();
    assert!(add < adc && ins[add + 1..adc].iter().all(|i| i.mnemonic() == Mnemonic::Mov), "{l}");
    for off in [0, 4] {
        assert!(
            ins.iter().any(|i| i.op0_kind() == OpKind::Memory
                && i.memory_base() == Register::None
                && i.memory_displacement32() == CALLFRAME_BASE + off),
            "no write of the callframe at +{off}:\n{l}"
        );
    }
    // A variable 64-bit shift uses shrd and shr by cl, then the fix-up for counts >= 32.
    assert!(ins.iter().any(|i| i.mnemonic() == Mnemonic::Shrd && i.op2_register() == Register::CL), "{l}");
    assert!(ins.iter().any(|i| i.mnemonic() == Mnemonic::Shr && i.op1_register() == Register::CL), "{l}");
    // Callee-saved registers used by the global allocator are saved and restored.
    let staged = compile_staged(&f).unwrap();
    assert!(staged.stats.regalloc.globals > 0);
}

#[test]
fn global_allocator_prefers_loop_variables() {
    // %i and %s are used in the loop (weight 8 per access); %u only outside it, more
    // often than either is used outside, but less in total.
    let src = "function %f(i32 %n) -> i32 {\n    local i32 %i\n    local i32 %s\n    local i32 %u\n    local i32 %w\n\
               b0:\n    %u = 1\n    %u = add(%u, %u)\n    %u = add(%u, %u)\n    %w = 2\n    %w = add(%w, %w)\n    jump b1\n\
               b1:\n    br slt(%i, %n), b2, b3\nb2:\n    %s = add(%s, %i)\n    %i = add(%i, 1)\n    jump b1\n\
               b3:\n    ret add(%s, add(%u, %w))\n}\n";
    let f = func(src);
    let (l, _) = rationalize::rationalize(&f).unwrap();
    let (mut l, _) = decompose::decompose(&l);
    lower::lower(&mut l);
    let depth = tandem_core::backend::regalloc::loop_depths(&l);
    assert_eq!(depth[Block::from_u32(1)], 1);
    assert_eq!(depth[Block::from_u32(2)], 1);
    assert_eq!(depth[Block::from_u32(0)], 0);
    let g = tandem_core::backend::regalloc::global_allocation(&l);
    let names: Vec<String> = g.iter().map(|(v, _)| l.var_name(*v)).collect();
    assert_eq!(&names[..2], &["i", "s"], "{names:?}");
    assert_eq!(names.len(), 3);
}

#[test]
fn allocation_checker_accepts_the_allocator_and_catches_broken_allocations() {
    use tandem_core::backend::regalloc::{MInst, Operand};
    use tandem_core::backend::regalloc_check::check_allocation;
    let src = "helper @heap_rmw(i32, i32) -> i32 effects(reads_heap, writes_heap)\n\
               function %f() -> i32 {\n    local i32 %local1\nb0:\n    \
               %local1 = shl(%local1, call @heap_rmw(0, 0))\n    ret %local1\n}\n";
    let (l, a) = allocate_like_the_seed(src);
    check_allocation(&l, &a).unwrap();
    let b0 = l.layout[0];
    // Without the spill around the call, the reload finds nothing and shl's operand is lost.
    let mut broken = a.clone();
    broken.code[b0].retain(|i| !matches!(i, MInst::Spill { .. }));
    let errs = check_allocation(&l, &broken).unwrap_err();
    assert!(errs.iter().any(|e| e.to_string().contains("copies no live value")), "{errs:#?}");
    // Without the move of the call's result into ecx, the shift count is not in ecx.
    let mut broken = a.clone();
    let mv = broken.code[b0].iter().position(|i| matches!(i, MInst::Move { src: Operand::Reg(_), .. })).unwrap();
    broken.code[b0].remove(mv);
    let errs = check_allocation(&l, &broken).unwrap_err();
    assert!(errs.iter().any(|e| e.to_string().contains("expected in ecx")), "{errs:#?}");
    // The spill and its reload moved together to a word that is no spill slot: the
    // replay alone would accept them (the value comes back), the frame does not.
    let home = match a.home[l.vars.keys().next().unwrap()] {
        Some(Operand::Mem(m)) => m.disp,
        other => panic!("%local1 lives in memory, not {other:?}"),
    };
    for (disp, is) in [(home, "a variable's home"), (8, "outside the frame's locals"), (-6, "not word-aligned")] {
        let mut moved = a.clone();
        for i in moved.code[b0].iter_mut() {
            match i {
                MInst::Spill { slot, .. } => *slot = disp,
                MInst::Move { src: Operand::Mem(m), .. } => m.disp = disp,
                _ => {}
            }
        }
        let errs = check_allocation(&l, &moved).unwrap_err();
        assert!(errs.iter().any(|e| e.to_string().contains(&format!("spill slot [ebp{disp:+}] is {is}"))), "{errs:#?}");
        let slots = errs.iter().filter(|e| e.to_string().contains("spill slot")).count();
        assert_eq!(slots, 2, "the spill and the reload: {errs:#?}");
    }
}

#[test]
fn allocation_checker_forgets_the_aliases_of_a_global_variable_at_its_write() {
    use tandem_core::backend::regalloc::{MInst, Operand};
    use tandem_core::backend::regalloc_check::check_allocation;
    // %i lives in a callee-saved register; the store reads it there (an alias) before
    // `%i = add(%i, 1)` writes it.
    let f = func(
        "function %f(i32 %p, i32 %n) -> i32 {\n    local i32 %i\nb0:\n    jump b1\nb1:\n    \
         store.32(add(%p, shl(%i, 2)), %i)\n    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret %i\n}\n",
    );
    let (l, _) = rationalize::rationalize(&f).unwrap();
    let (mut l, _) = decompose::decompose(&l);
    lower::lower(&mut l);
    let a = regalloc(&l, RegallocOptions::default()).unwrap();
    check_allocation(&l, &a).unwrap();
    // The write of %i moved up to right after the first alias of a read of it: the
    // aliased read's user then reads the register after the write, which no longer holds
    // the value read.
    let mut moved = 0;
    for &b in &l.layout {
        let code = &a.code[b];
        let write_of = |i: &MInst| match i {
            MInst::Node { node, .. } => match l.nodes[*node].op {
                Op::Write(v) => a.home[v].and_then(|h| if let Operand::Reg(r) = h { Some(r) } else { None }),
                _ => None,
            },
            _ => None,
        };
        let Some(j) = code.iter().position(|i| write_of(i).is_some()) else { continue };
        let reg = write_of(&code[j]).unwrap();
        let Some(k) = code[..j].iter().position(|i| matches!(i, MInst::Alias { reg: r, .. } if *r == reg)) else { continue };
        let mut broken = a.clone();
        let write = broken.code[b].remove(j);
        broken.code[b].insert(k + 1, write);
        let errs = check_allocation(&l, &broken).unwrap_err();
        assert!(errs.iter().any(|e| e.to_string().contains(&format!("expected in {reg}"))), "{errs:#?}");
        moved += 1;
    }
    assert!(moved > 0, "no block reads a global variable by an alias before writing it:\n{}", a.print(&l));
}

#[test]
fn global_variables_are_used_in_place_by_instructions_that_only_read_them() {
    // %p and %i live in callee-saved registers; the store's address mode and the
    // compare read them there without copies.
    let f = func(
        "function %f(i32 %p, i32 %n) -> i32 {\n    local i32 %i\nb0:\n    jump b1\nb1:\n    \
         store.32(add(%p, shl(%i, 2)), %i)\n    %i = add(%i, 1)\n    br slt(%i, %n), b1, b2\nb2:\n    ret %i\n}\n",
    );
    let staged = compile_staged(&f).unwrap();
    assert!(staged.stats.regalloc.aliased >= 3, "{:?}", staged.stats.regalloc);
    let ins = decode(&staged.code.bytes);
    let callee_saved = [Register::EBX, Register::ESI, Register::EDI];
    let store = ins
        .iter()
        .find(|i| i.mnemonic() == Mnemonic::Mov && i.op0_kind() == OpKind::Memory && i.memory_index_scale() == 4)
        .unwrap_or_else(|| panic!("{}", listing(&ins)));
    assert!(callee_saved.contains(&store.memory_base()), "{}", listing(&ins));
    assert!(callee_saved.contains(&store.memory_index()), "{}", listing(&ins));
    assert!(callee_saved.contains(&store.op1_register()), "{}", listing(&ins));
}
