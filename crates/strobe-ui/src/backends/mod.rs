//! The platform backends, one file (or folder) each, and the registry
//! listing them: a new platform is its file plus one line in [`all`].

#[cfg(target_os = "linux")]
pub mod atspi;

use crate::{Display, UiBackend};

/// Every backend built for this platform, in the order they are tried.
pub fn all() -> Vec<Box<dyn UiBackend>> {
    vec![
        #[cfg(target_os = "linux")]
        Box::new(atspi::Atspi),
    ]
}

/// The first backend that can serve `display`, if any.
pub fn for_display(display: &Display) -> Option<Box<dyn UiBackend>> {
    all().into_iter().find(|b| b.available(display))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bounds, Capture, InputStep, NativeAction, NodeHandle, UiError, UiNode, Window};

    /// A backend double: the interface is enough for what `debug_ui` does
    /// (find the session's window, read its tree, capture it) without
    /// knowing the platform.
    struct Fixed;

    impl UiBackend for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn available(&self, display: &Display) -> bool {
            display.name.as_deref() == Some(":5999")
        }
        fn windows(&self, _: &Display, pids: &[u32]) -> Result<Vec<Window>, UiError> {
            Ok(pids
                .iter()
                .filter(|&&p| p == 42)
                .map(|&pid| Window {
                    handle: 1,
                    pid,
                    title: "demo".into(),
                    bounds: Bounds {
                        x: 0,
                        y: 0,
                        width: 2,
                        height: 1,
                    },
                })
                .collect())
        }
        fn tree(&self, _: &Display, pid: u32, _: bool) -> Result<Vec<UiNode>, UiError> {
            if pid != 42 {
                return Err(UiError::NotAccessible {
                    pid,
                    why: "not registered".into(),
                });
            }
            Ok(vec![UiNode {
                role: "frame".into(),
                name: "demo".into(),
                children: vec![UiNode {
                    role: "push button".into(),
                    name: "Play".into(),
                    actions: vec!["press".into()],
                    ..Default::default()
                }],
                ..Default::default()
            }])
        }
        fn capture(&self, _: &Display, w: &Window) -> Result<Capture, UiError> {
            Ok(Capture {
                width: w.bounds.width,
                height: w.bounds.height,
                rgba: vec![0; (w.bounds.width * w.bounds.height * 4) as usize],
            })
        }
        fn read(&self, d: &Display, _: &NodeHandle, hidden: bool) -> Result<UiNode, UiError> {
            Ok(self.tree(d, 42, hidden)?.remove(0).children.remove(0))
        }
        fn act(&self, _: &Display, _: &NodeHandle, a: &NativeAction) -> Result<bool, UiError> {
            Ok(*a == NativeAction::Do("press".into()))
        }
        fn input(&self, _: &Display, _: &[InputStep]) -> Result<(), UiError> {
            Err(UiError::Input("a fixed backend takes no input".into()))
        }
    }

    #[test]
    fn a_session_window_is_found_read_and_captured_through_the_trait() {
        let display = Display {
            name: Some(":5999".into()),
            accessibility_bus: None,
            session_bus: None,
            xauthority: None,
        };
        let backends: Vec<Box<dyn UiBackend>> = vec![Box::new(Fixed)];
        let b = backends.iter().find(|b| b.available(&display)).unwrap();
        let windows = b.windows(&display, &[41, 42]).unwrap();
        assert_eq!(windows.len(), 1);
        let tree = b.tree(&display, windows[0].pid, false).unwrap();
        assert_eq!(tree[0].children[0].name, "Play");
        let h = NodeHandle("play".into());
        assert_eq!(b.read(&display, &h, false).unwrap().name, "Play");
        assert!(
            b.act(&display, &h, &NativeAction::Do("press".into()))
                .unwrap()
        );
        assert!(!b.act(&display, &h, &NativeAction::Focus).unwrap());
        assert!(b.input(&display, &[]).is_err());
        let shot = b.capture(&display, &windows[0]).unwrap();
        assert_eq!(shot.rgba.len(), 8);
        let e = b.tree(&display, 41, false).unwrap_err().to_string();
        assert!(e.contains("not on the accessibility bus"), "{e}");
        // No X server answers on :5999 here (the tests' displays are their
        // own, numbered by Xvfb): no backend serves it.
        assert!(for_display(&display).is_none());
    }
}
