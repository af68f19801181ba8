//! `strobe install` end to end: the real binary on a temporary HOME holding
//! realistic configs of each format (strict JSON with other servers, JSONC
//! with comments and trailing commas, TOML with comments), plus a broken
//! file and a read-only one; dry run, install, idempotence, an agent asked
//! for by name, project scope, and uninstall.

use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const CLAUDE_JSON: &str = r#"{
  "numStartups": 12,
  "mcpServers": {
      "github":{"command":"gh-mcp","args":["--stdio"]}
  },
  "projects": {"/src/app": {"allowedTools": []}}
}
"#;

const CODEX_TOML: &str = r#"# Codex settings
model = "o4-mini"  # the fast one

[mcp_servers.docs]
command = "docs-mcp"   # local docs
args = ["serve"]
"#;

const VSCODE_JSONC: &str = r#"{
	// servers I use
	"servers": {
		"memory": { "type": "stdio", "command": "mem" }, // keep
	},
}
"#;

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        for d in [
            ".codex",
            ".cursor",
            ".gemini",
            ".config/Code/User",
            ".config/Claude",
            "bin",
        ] {
            fs::create_dir_all(home.join(d)).unwrap();
        }
        fs::create_dir_all(&project).unwrap();
        fs::write(home.join(".claude.json"), CLAUDE_JSON).unwrap();
        fs::write(home.join(".codex/config.toml"), CODEX_TOML).unwrap();
        fs::write(home.join(".config/Code/User/mcp.json"), VSCODE_JSONC).unwrap();
        fs::write(home.join(".gemini/settings.json"), "{\"mcpServers\": {\n").unwrap();
        let desktop = home.join(".config/Claude/claude_desktop_config.json");
        fs::write(&desktop, "{}\n").unwrap();
        fs::set_permissions(&desktop, fs::Permissions::from_mode(0o444)).unwrap();
        Home {
            _dir: dir,
            home,
            project,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.home.join(rel)
    }

    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Runs `strobe install ARGS` in the project: (exit code, stdout+stderr).
    fn install(&self, args: &[&str]) -> (i32, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_strobe"))
            .arg("install")
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", self.home.join("bin"))
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }
}

fn strobe_bin() -> String {
    Path::new(env!("CARGO_BIN_EXE_strobe"))
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// JSONC (comments, trailing commas) as a value.
fn jsonc(text: &str) -> Value {
    jsonc_parser::parse_to_serde_value(text, &Default::default())
        .unwrap()
        .unwrap()
}

#[test]
fn install_registers_strobe_with_every_detected_agent_safely() {
    let h = Home::new();
    let before: Vec<(String, String)> = [
        ".claude.json",
        ".codex/config.toml",
        ".config/Code/User/mcp.json",
        ".gemini/settings.json",
    ]
    .iter()
    .map(|f| (f.to_string(), h.read(f)))
    .collect();

    // A dry run shows the diffs and writes nothing.
    let (code, out) = h.install(&["--dry-run"]);
    assert_eq!(code, 1, "two files are refused: {out}");
    assert!(
        out.contains("+++ ") && out.contains("+    \"strobe\""),
        "{out}"
    );
    assert!(out.contains("nothing was written"), "{out}");
    for (f, text) in &before {
        assert_eq!(&h.read(f), text, "{f} changed in a dry run");
        assert!(!h.path(&format!("{f}.strobe-backup")).exists());
    }
    assert!(!h.path(".cursor/mcp.json").exists());

    let (code, out) = h.install(&[]);
    assert_eq!(code, 1, "{out}");
    let bin = strobe_bin();
    // Claude Code: strict JSON, other servers and keys kept, a backup.
    let claude: Value = serde_json::from_str(&h.read(".claude.json")).unwrap();
    assert_eq!(claude["mcpServers"]["strobe"]["command"], bin.as_str());
    assert_eq!(
        claude["mcpServers"]["strobe"]["args"],
        serde_json::json!(["mcp"])
    );
    assert_eq!(claude["mcpServers"]["github"]["command"], "gh-mcp");
    assert_eq!(claude["numStartups"], 12);
    assert_eq!(h.read(".claude.json.strobe-backup"), CLAUDE_JSON);
    assert!(
        out.contains("claude-code: added to ~/.claude.json"),
        "{out}"
    );
    // Its skills.
    let skill = h.read(".claude/skills/strobe-debugging/SKILL.md");
    assert!(
        skill.starts_with("---\nname: strobe-debugging\n"),
        "{skill}"
    );
    assert!(h.path(".claude/skills/strobe-tdd/SKILL.md").is_file());
    // Codex: TOML, comments kept.
    let codex = h.read(".codex/config.toml");
    assert!(codex.starts_with(CODEX_TOML), "{codex}");
    assert!(
        codex.contains(&format!(
            "[mcp_servers.strobe]\ncommand = \"{bin}\"\nargs = [\"mcp\"]"
        )),
        "{codex}"
    );
    // VS Code: JSONC, comments and trailing commas kept.
    let vscode = h.read(".config/Code/User/mcp.json");
    assert!(
        vscode.contains("// servers I use") && vscode.contains("// keep"),
        "{vscode}"
    );
    let v = jsonc(&vscode);
    assert_eq!(v["servers"]["strobe"]["type"], "stdio");
    assert_eq!(v["servers"]["memory"]["command"], "mem");
    // Cursor: a new owner-only file.
    let cursor = h.path(".cursor/mcp.json");
    assert_eq!(
        fs::metadata(&cursor).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The broken and the read-only files are refused and untouched.
    assert!(
        out.contains("gemini: FAILED: ~/.gemini/settings.json cannot be parsed"),
        "{out}"
    );
    assert_eq!(h.read(".gemini/settings.json"), "{\"mcpServers\": {\n");
    assert!(
        out.contains("claude-desktop: FAILED:") && out.contains("is read-only"),
        "{out}"
    );
    assert_eq!(h.read(".config/Claude/claude_desktop_config.json"), "{}\n");
    // opencode is not on this machine.
    assert!(
        out.contains(
            "not found on this machine, so not written: opencode (--agent NAME writes one anyway)"
        ),
        "{out}"
    );

    // Mend the two; a second run changes only them, a third nothing.
    fs::write(
        h.path(".gemini/settings.json"),
        "{\"theme\": \"Dracula\"}\n",
    )
    .unwrap();
    let desktop = h.path(".config/Claude/claude_desktop_config.json");
    fs::set_permissions(&desktop, fs::Permissions::from_mode(0o644)).unwrap();
    let (code, out) = h.install(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("claude-code: ~/.claude.json: nothing to change"),
        "{out}"
    );
    assert!(
        out.contains("gemini: added to ~/.gemini/settings.json"),
        "{out}"
    );
    assert_eq!(
        h.read(".claude.json.strobe-backup"),
        CLAUDE_JSON,
        "no second backup over the first"
    );
    let (code, out) = h.install(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 changed,"), "{out}");
    assert!(!out.contains("added") && !out.contains("updated"), "{out}");

    // Asked for by name, an undetected agent is written, and says so.
    let (code, out) = h.install(&["--agent", "opencode"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("opencode not detected; written as asked"),
        "{out}"
    );
    let oc: Value = serde_json::from_str(&h.read(".config/opencode/opencode.json")).unwrap();
    assert_eq!(
        oc["mcp"]["strobe"]["command"],
        serde_json::json!([bin, "mcp"])
    );
    assert_eq!(oc["mcp"]["strobe"]["type"], "local");

    // Uninstall: entries and skills go, everything else stays.
    let (code, out) = h.install(&["--uninstall"]);
    assert_eq!(code, 0, "{out}");
    let claude: Value = serde_json::from_str(&h.read(".claude.json")).unwrap();
    assert!(claude["mcpServers"].get("strobe").is_none());
    assert_eq!(claude["mcpServers"]["github"]["command"], "gh-mcp");
    let codex = h.read(".codex/config.toml");
    assert_eq!(codex, CODEX_TOML);
    assert!(h.read(".config/Code/User/mcp.json").contains("// keep"));
    assert!(!h.path(".claude/skills/strobe-debugging").exists());
    let (_, out) = h.install(&["--uninstall"]);
    assert!(out.contains("0 changed,"), "{out}");
}

#[test]
fn project_scope_a_foreign_skill_and_an_unknown_agent() {
    let h = Home::new();
    // Someone's own skill of the same name is never overwritten.
    let mine = h.project.join(".claude/skills/strobe-tdd/SKILL.md");
    fs::create_dir_all(mine.parent().unwrap()).unwrap();
    fs::write(&mine, "my own notes\n").unwrap();
    let (code, out) = h.install(&[
        "--scope",
        "project",
        "--agent",
        "claude-code",
        "--agent",
        "claude-desktop",
    ]);
    assert_eq!(code, 0, "{out}");
    let mcp: Value =
        serde_json::from_str(&fs::read_to_string(h.project.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(mcp["mcpServers"]["strobe"]["type"], "stdio");
    assert!(
        h.project
            .join(".claude/skills/strobe-debugging/SKILL.md")
            .is_file()
    );
    assert_eq!(fs::read_to_string(&mine).unwrap(), "my own notes\n");
    assert!(
        out.contains("is not Strobe's (no install mark); left as it is"),
        "{out}"
    );
    assert!(
        out.contains("claude-desktop: skipped: claude desktop has no project-scope config"),
        "{out}"
    );
    // Nothing in HOME was touched.
    assert_eq!(h.read(".claude.json"), CLAUDE_JSON);

    let (code, out) = h.install(&["--agent", "vim"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no agent \"vim\"; known: claude-code, codex, cursor, vscode, claude-desktop, opencode, gemini, or all"), "{out}");
}
