//! Who called a tool: the MCP client names Strobe's own clients give in
//! `initialize`, and which side of the debugging a name stands for (the
//! web UI's agent lane marks each call with it).

/// `strobe dap`'s MCP client: an editor's debug session.
pub const EDITOR_CLIENT: &str = "strobe-dap";
/// `strobe scenarios`' MCP client: a scenario suite run as tests.
pub const SCENARIOS_CLIENT: &str = "strobe-scenarios";

/// The side a client name stands for: `editor`, `scenarios`, or `agent`
/// (any other client, including one that gave no name).
pub fn side(client: &str) -> &'static str {
    match client {
        EDITOR_CLIENT => "editor",
        SCENARIOS_CLIENT => "scenarios",
        _ => "agent",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn strobes_own_clients_are_told_from_agents() {
        assert_eq!(super::side("strobe-dap"), "editor");
        assert_eq!(super::side("strobe-scenarios"), "scenarios");
        assert_eq!(super::side("claude-code"), "agent");
        assert_eq!(super::side(""), "agent");
    }
}
