//! The size budget of the tool list. An agent pays for `tools/list` on
//! every turn, so it is held to 12,000 characters of JSON for the tools of
//! issue 17's time plus what each tool added since was granted, and each
//! tool to its own budget: today's at their size when it was set (rounded
//! up), a new tool at 1,500 until it is measured and granted less. A tool
//! that outgrows its budget should say less (the README keeps the long
//! form) before its budget is raised.

/// The whole list's budget, in characters of `tools/list` JSON: 12,000 for
/// the eight tools of issue 17, plus 1,000 for `debug_ui` (770 when added),
/// 1,500 for `debug_ui_action` (a new tool's default; 1,498 when added), 100 for
/// `debug_query`'s `ui_action` event type, and for the channels issue 900 for
/// `debug_channel` (855 when added: the spec's four channel tools as one),
/// 700 for `debug_test_scenario` (664) and 200 for `debug_launch`'s `stdin` and
/// `channels` (1,313 with them); for issue 25's server-side waits 300
/// (`debug_query`'s `waitMs`, `debug_session`'s `waitFor` and `waitMs`) and
/// 900 for `debug_diff` (809 when added: the one question no other tool
/// answers, what differs between a working and a failing run), whose
/// `debug_test {rerun: "compare"}` fits in the same grant; and 100 for
/// `debug_query`'s `exactCount` (counts past 6 ms are estimated otherwise);
/// and for issue 45 100 for `debug_channel`'s `allowOutsideProject` (file
/// channels are contained to the project; leaving it is the agent's opt-in).
pub const TOTAL_BUDGET: usize = 17_800;

/// A tool not in [`TOOL_BUDGETS`] gets this many characters.
pub const NEW_TOOL_BUDGET: usize = 1_500;

/// Each tool's budget: its size when the budget was set, rounded up to the
/// next 100. Before issue 17 these eight took 24,220 characters (launch
/// 2,105, session 1,427, trace 3,845, query 4,640, memory 3,263,
/// breakpoint 2,726, continue 1,318, test 4,853). Raised since, with the
/// total still within [`TOTAL_BUDGET`]: breakpoint (staging without a
/// session) and launch (`stopOnEntry`), by 100 each; query by 100 for the
/// `ui_action` event type; launch by 200 for `stdin` and `channels` (the
/// query's six new event types fit in its budget); query by 100 for
/// `waitMs` and session by 200 for `waitFor` and `waitMs`; test by 100 for
/// `rerun: "compare"`; query by 100 more for `exactCount`; channel by 100
/// for `allowOutsideProject`.
pub const TOOL_BUDGETS: &[(&str, usize)] = &[
    ("debug_breakpoint", 1_500),
    ("debug_channel", 1_000),
    ("debug_continue", 800),
    ("debug_diff", 900),
    ("debug_launch", 1_400),
    ("debug_memory", 1_800),
    ("debug_query", 2_500),
    ("debug_session", 800),
    ("debug_test", 1_900),
    ("debug_test_scenario", 700),
    ("debug_trace", 2_100),
    ("debug_ui", 1_000),
    ("debug_ui_action", 1_500),
];

/// The budget of the tool named `name`.
pub fn budget_of(name: &str) -> usize {
    TOOL_BUDGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(NEW_TOOL_BUDGET, |(_, b)| *b)
}

mod tests {
    use super::*;

    /// Every tool as `tools/list` sends it, with its size in characters.
    fn sizes() -> (Vec<(String, usize)>, usize) {
        let tools = crate::StrobeServer::tool_list();
        let each = tools
            .iter()
            .map(|t| {
                let json = serde_json::to_string(t).expect("a tool serializes");
                (t.name.to_string(), json.chars().count())
            })
            .collect();
        let list = rmcp::model::ListToolsResult::with_all_items(tools);
        let total = serde_json::to_string(&list)
            .expect("the list serializes")
            .chars()
            .count();
        (each, total)
    }

    #[test]
    fn the_tool_list_stays_within_its_budgets() {
        let (each, total) = sizes();
        let mut over = Vec::new();
        for (name, size) in &each {
            let budget = budget_of(name);
            println!("{name}: {size} of {budget}");
            if *size > budget {
                over.push(format!("{name} is {size} characters, over its {budget}"));
            }
        }
        println!("tools/list: {total} of {TOTAL_BUDGET}");
        if total > TOTAL_BUDGET {
            over.push(format!(
                "tools/list is {total} characters, over {TOTAL_BUDGET}"
            ));
        }
        assert!(
            over.is_empty(),
            "{}; shorten the descriptions (the README keeps the long form)",
            over.join("; ")
        );
    }

    #[test]
    fn the_budget_table_names_only_real_tools() {
        let (each, _) = sizes();
        for (name, _) in TOOL_BUDGETS {
            assert!(
                each.iter().any(|(n, _)| n == name),
                "{name} has a budget but no tool"
            );
        }
    }

    #[test]
    fn listed_names_match_what_the_server_accepts() {
        let kinds: Vec<&str> = strobe_core::EventKind::ALL
            .iter()
            .map(|k| k.name())
            .collect();
        assert_eq!(crate::params::EVENT_TYPES.to_vec(), kinds);
        // The schema's `framework` enum is the adapter registry: a framework
        // registered in strobe-testing is offered without touching this crate.
        let schema = serde_json::Value::Object(
            (*crate::schema::input::<crate::params::TestParams>()).clone(),
        );
        let listed: Vec<&str> = schema["properties"]["framework"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("no framework enum in {schema}"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let registered: Vec<&str> = strobe_testing::adapters()
            .iter()
            .map(|a| a.name())
            .collect();
        assert_eq!(listed, registered);
    }
}
