//! Pure planning: a request checked, its sites resolved from debug info,
//! the spec the agent plants for each, and the stops of a step.

use super::*;

pub(in crate::manager) fn where_text(p: &PausedThread) -> String {
    match (&p.function, &p.file, p.line) {
        (Some(f), Some(file), Some(l)) => format!(
            "{f} at {}:{l}",
            std::path::Path::new(file)
                .file_name()
                .map_or(file.clone(), |n| n.to_string_lossy().into_owned())
        ),
        (Some(f), _, _) => format!("{f} ({})", p.address),
        _ => p.address.clone(),
    }
}

pub(in crate::manager) fn validate_request(a: &BreakpointRequest) -> Result<(), SessionError> {
    match (&a.function, &a.file, a.line) {
        (Some(_), None, None) | (None, Some(_), Some(_)) => {}
        (Some(_), _, _) => {
            return Err(err("give either 'function' or 'file' + 'line', not both"));
        }
        (None, Some(_), None) => return Err(err("'file' needs 'line'")),
        (None, None, Some(_)) => {
            return Err(err(
                "'line' needs 'file' (a path or its tail, e.g. \"src/main.c\")",
            ));
        }
        (None, None, None) => {
            return Err(err(
                "each breakpoint needs 'function' (a pattern like \"audio::process\") or 'file' + 'line'",
            ));
        }
    }
    if a.line == Some(0) {
        return Err(err("'line' counts from 1"));
    }
    if a.hit_count == Some(0) {
        return Err(err("'hitCount' counts from 1 (pause from the Nth hit on)"));
    }
    if a.message.as_deref().is_some_and(str::is_empty) {
        return Err(err("a logpoint's 'message' is empty"));
    }
    if a.message.is_some() && a.hit_count.is_some() {
        return Err(err(
            "'hitCount' is for breakpoints; a logpoint logs every hit whose condition holds",
        ));
    }
    Ok(())
}

pub(in crate::manager) fn resolve_sites(
    tracer: &mut Tracer,
    a: &BreakpointRequest,
) -> Result<(Vec<BreakSite>, Option<String>), SessionError> {
    let (sites, note) = if let Some(f) = &a.function {
        let pattern = strobe_symbols::Pattern::parse(f)
            .map_err(|e| err(format!("'function' {f:?} is not a valid pattern: {e}")))?;
        let sites = tracer.function_sites(&pattern);
        if sites.is_empty() {
            return Err(err(format!(
                "no function matches {f:?} in the program or its loaded libraries (check the spelling, or use a wider pattern like \"**::{f}\")"
            )));
        }
        (sites, None)
    } else {
        let file = a.file.as_deref().expect("validated");
        let line = a.line.expect("validated");
        let (sites, at) = tracer.line_sites(file, line);
        if sites.is_empty() {
            return Err(err(format!(
                "no code at or after {file}:{line} in the line tables (is the file part of the program, built with -g? give its name or a path tail like \"src/main.c\")"
            )));
        }
        let note = (at != line).then(|| {
            format!("line {line} has no code; moved to line {at}, the next line that has")
        });
        (sites, note)
    };
    if sites.len() > frames::MAX_SITES {
        return Err(err(format!(
            "it matches {} places (at most {}); narrow the pattern",
            sites.len(),
            frames::MAX_SITES
        )));
    }
    Ok((sites, note))
}

/// The agent's description of one breakpoint address: CFA rule and the
/// variables its condition and message mention.
pub(in crate::manager) fn agent_spec(
    tracer: &mut Tracer,
    a: &BreakpointRequest,
    agent_id: &str,
    site: &BreakSite,
    address: u64,
    image_base: u64,
    bases: &dyn Fn(&std::path::Path) -> Option<u64>,
) -> BreakpointSpec {
    let text = format!(
        "{} {}",
        a.condition.as_deref().unwrap_or(""),
        a.message.as_deref().unwrap_or("")
    );
    let layout = tracer.modules[site.module]
        .native()
        .and_then(|index| index.function_containing(site.offset))
        .and_then(|fi| tracer.frame_layout(site.module, fi, site.offset));
    let mut vars = Vec::new();
    let mut cfa = None;
    if let Some(l) = &layout {
        cfa = l.cfa.map(|c| (c.register, c.offset));
        let uses_args = frames::mentions(&text, "args");
        for v in &l.vars {
            if frames::mentions(&text, &v.name) || (uses_args && v.parameter) {
                vars.push(VarDesc {
                    name: v.name.clone(),
                    param: v.parameter,
                    loc: frames::agent_location(&v.place, l.frame_base, image_base),
                    ty: frames::agent_type(&l.types, v.ty, 3),
                });
            }
        }
    }
    tracer.globals_for(&text, &mut vars, bases);
    BreakpointSpec {
        id: agent_id.to_string(),
        address: Hex(address),
        cfa,
        vars,
        condition: a.condition.clone(),
        message: a.message.clone(),
        hit_count: a.hit_count,
    }
}

/// Step stops from `p`: see [`frames::step_targets`]; the return address
/// ends the step when the function returns (stack pointer back at the CFA).
pub(in crate::manager) fn plan_step(
    tracer: &mut Tracer,
    mem: &Mem,
    p: &PausedThread,
    action: &str,
) -> ResumeOrder {
    let mut stops = Vec::new();
    let mut scan = None;
    let mut scan_frame = None;
    if let Some(loc) = &p.location {
        let rule = tracer.cfa_rule(loc.module, loc.offset);
        let cfa = frames::cfa_value(rule, &p.regs);
        if let Some(cfa) = cfa
            && let Ok(ret) = mem.read_u64(cfa.wrapping_sub(8))
        {
            stops.push(StepStop(Hex(ret), Some(FrameCheck(7, 0, Hex(cfa))), false));
        }
        if action != "step-out"
            && let Some(fi) = loc.function_index
        {
            let stmts = tracer.statements(loc.module, fi);
            let (targets, range) = frames::step_targets(&stmts, loc.offset);
            for t in targets {
                let check = match (tracer.cfa_rule(loc.module, t), cfa) {
                    (Some(r), Some(c)) => Some(FrameCheck(r.register, r.offset, Hex(c))),
                    _ => None,
                };
                stops.push(StepStop(Hex(p.image_base + t), check, false));
            }
            if action == "step-into" {
                let f_end = tracer.modules[loc.module]
                    .native()
                    .and_then(|index| {
                        index.functions[fi]
                            .ranges
                            .iter()
                            .find(|(s, e)| (*s..*e).contains(&loc.offset))
                    })
                    .map_or(range.1, |r| r.1);
                scan = Some((
                    Hex(p.image_base + range.0),
                    Hex(p.image_base + range.1.min(f_end)),
                ));
                if let (Some(r), Some(c)) = (rule, cfa) {
                    scan_frame = Some(FrameCheck(r.register, r.offset, Hex(c)));
                }
            }
        }
    }
    ResumeOrder::Step {
        stops,
        scan,
        scan_frame,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(function: Option<&str>, file: Option<&str>, line: Option<u32>) -> BreakpointRequest {
        BreakpointRequest {
            function: function.map(str::to_string),
            file: file.map(str::to_string),
            line,
            ..Default::default()
        }
    }

    fn refusal(a: &BreakpointRequest) -> String {
        validate_request(a).unwrap_err().to_string()
    }

    #[test]
    fn a_request_names_a_function_or_a_file_and_line() {
        assert!(validate_request(&request(Some("audio::process"), None, None)).is_ok());
        assert!(validate_request(&request(None, Some("src/main.c"), Some(12))).is_ok());
        let both = refusal(&request(Some("f"), Some("a.c"), Some(1)));
        assert!(both.contains("not both"), "{both}");
        assert!(refusal(&request(None, Some("a.c"), None)).contains("'file' needs 'line'"));
        assert!(refusal(&request(None, None, Some(3))).contains("'line' needs 'file'"));
        assert!(refusal(&request(None, None, None)).contains("each breakpoint needs"));
        assert!(refusal(&request(None, Some("a.c"), Some(0))).contains("counts from 1"));
    }

    #[test]
    fn hit_counts_are_for_breakpoints_and_messages_are_not_empty() {
        let mut a = request(Some("f"), None, None);
        a.hit_count = Some(0);
        assert!(refusal(&a).contains("'hitCount' counts from 1"));
        a.hit_count = Some(3);
        assert!(validate_request(&a).is_ok());
        a.message = Some("x={x}".into());
        assert!(refusal(&a).contains("a logpoint logs every hit"));
        a.hit_count = None;
        assert!(validate_request(&a).is_ok());
        a.message = Some(String::new());
        assert!(refusal(&a).contains("'message' is empty"));
    }

    fn paused(function: Option<&str>, file: Option<&str>, line: Option<u32>) -> PausedThread {
        PausedThread {
            locals: None,
            python: false,
            thread_id: 7,
            reason: "breakpoint".into(),
            breakpoint_id: None,
            function: function.map(str::to_string),
            file: file.map(str::to_string),
            line,
            address: "0x401136".into(),
            arguments: vec![],
            backtrace: Value::Null,
            paused_at_ns: 0,
            hit_to_visible_us: 0.0,
            seq: 0,
            regs: Registers::new(),
            location: None,
            image_base: 0,
        }
    }

    #[test]
    fn a_pause_is_placed_by_function_and_file_name_else_its_address() {
        let full = paused(Some("step"), Some("/src/proj/main.c"), Some(42));
        assert_eq!(where_text(&full), "step at main.c:42");
        assert_eq!(
            where_text(&paused(Some("step"), None, None)),
            "step (0x401136)"
        );
        assert_eq!(where_text(&paused(None, None, None)), "0x401136");
    }
}
