//! A paused thread's locals: its frame, reading a local through its
//! DWARF place, and describing one for the agent's conditions.

use super::*;

/// A stopped frame's registers and its image's load address.
pub(in crate::manager) struct StoppedFrame {
    /// Registers by DWARF number.
    pub(in crate::manager) regs: Registers,
    /// Load address of the frame's image.
    pub(in crate::manager) image_base: u64,
}

impl PausedThread {
    pub(in crate::manager) fn frame(&self) -> StoppedFrame {
        StoppedFrame {
            regs: self.regs.clone(),
            image_base: self.image_base,
        }
    }
}

/// Reads a local (with `.field` / `->field` / `[i]` steps) of a stopped frame.
pub(in crate::manager) fn read_local(
    mem: &Mem,
    layout: &FrameLayout,
    frame: &StoppedFrame,
    name: &str,
    steps: &[Step],
    depth: u32,
) -> Result<Value, String> {
    let spec = local_spec(layout, frame, name, steps)?;
    match spec {
        LocalSpec::Memory(spec) => {
            let addr = mem.locate(&spec)?;
            let bytes = mem.read(addr, spec.size)?;
            let value = if spec.string {
                mem.c_string(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
            } else {
                values::render_memory(
                    &spec.ty,
                    &bytes,
                    addr,
                    depth,
                    &varpath::path_text(name, steps),
                )
            };
            Ok(json!({"address": hex(addr), "type": values::type_name(&spec.ty), "value": value}))
        }
        LocalSpec::Value { bytes, ty, string } => {
            let value = if string {
                mem.c_string(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
            } else {
                values::render_memory(&ty, &bytes, 0, depth, &varpath::path_text(name, steps))
            };
            Ok(json!({"register": true, "type": values::type_name(&ty), "value": value}))
        }
    }
}

/// Where a local lives: memory (readable and writable) or a value only.
pub(in crate::manager) enum LocalSpec {
    /// In memory, as a read chain.
    Memory(values::WatchSpec),
    /// A register or constant's value.
    Value {
        /// Little-endian bytes of the value (its type's size).
        bytes: Vec<u8>,
        /// Its type.
        ty: WatchType,
        /// A `char *` (the string is read too).
        string: bool,
    },
}

/// Resolves a paused frame's variable `name` with `steps` (errors name the
/// variables in scope when it is not one of them).
pub(in crate::manager) fn local_spec(
    layout: &FrameLayout,
    frame: &StoppedFrame,
    name: &str,
    steps: &[Step],
) -> Result<LocalSpec, String> {
    let Some(v) = layout.vars.iter().find(|v| v.name == name) else {
        let names: Vec<&str> = layout.vars.iter().map(|v| v.name.as_str()).collect();
        return Err(format!(
            "no variable {name:?} in scope here (in scope: {})",
            names.join(", ")
        ));
    };
    let rule_cfa = frames::cfa_value(layout.cfa, &frame.regs);
    let label = varpath::path_text(name, steps);
    let types = &layout.types;
    // A slice's `T[n]` goes into a copy of the frame's types: what a
    // paused frame reads is never stored.
    let mut array_of = varpath::array_in_copy(types);
    let mut spec = |start| {
        varpath::chain_spec(
            &label,
            &label,
            start,
            types.clone(),
            layout.module as u32,
            steps,
            &mut array_of,
        )
        .map(LocalSpec::Memory)
    };
    match frames::resolve_place(
        &v.place,
        layout.frame_base,
        rule_cfa,
        &frame.regs,
        frame.image_base,
    ) {
        Resolved::Address(a) => spec(varpath::Start::At(a, v.ty)),
        Resolved::Value(value) => {
            if steps.is_empty() {
                let size = types.size_of(v.ty).unwrap_or(8).min(8) as usize;
                let string = matches!(
                    types.get(types.strip(v.ty)),
                    strobe_symbols::Type::Pointer { target, .. }
                        if matches!(types.get(types.strip(*target)), strobe_symbols::Type::Int { size: 1, is_char: true, .. })
                );
                return Ok(LocalSpec::Value {
                    bytes: value.to_le_bytes()[..size].to_vec(),
                    ty: WatchType::Typed(v.ty, types.clone(), layout.module as u32),
                    string,
                });
            }
            // A pointer held in a register: its first step goes through it.
            if !matches!(
                types.get(types.strip(v.ty)),
                strobe_symbols::Type::Pointer { .. }
            ) {
                return Err(format!(
                    "{name} is held in a register here; read it without members"
                ));
            }
            spec(varpath::Start::Pointer(value, v.ty))
        }
        Resolved::Unavailable(why) => Err(format!("{name} cannot be read here: {why}")),
    }
}
