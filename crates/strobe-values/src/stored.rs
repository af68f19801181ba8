//! A plan as stored with its session (watch types name their image by
//! index), so a later daemon decodes the same records.

use crate::place::*;
use crate::plan::*;
use crate::wire::*;
use serde::{Deserialize, Serialize};
use strobe_symbols::{TypeId, TypeTable};

/// A [`FunctionPlan`] as stored with its session: watch types name their
/// image by index instead of holding its type table.
#[derive(Debug, Serialize, Deserialize)]
pub struct StoredPlan {
    pub(crate) id: u16,
    pub(crate) params: Vec<(String, TypeId, Loc)>,
    pub(crate) ret: Option<(TypeId, Loc)>,
    pub(crate) enter: Vec<Node>,
    pub(crate) exit: Vec<Node>,
    pub(crate) enter_keys: Vec<((u16, u8, u64), u16)>,
    pub(crate) exit_keys: Vec<((u16, u8, u64), u16)>,
    pub(crate) watches: Vec<(String, u16, u16, StoredWatchType)>,
    #[serde(default)]
    pub(crate) exprs: Vec<(String, u16)>,
    pub(crate) stack_bytes: u64,
    pub(crate) depth: u32,
    pub(crate) truncated: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum StoredWatchType {
    Typed(TypeId, u32),
    Hint(String),
}

impl FunctionPlan {
    /// The plan in its stored form.
    pub fn to_stored(&self) -> StoredPlan {
        StoredPlan {
            id: self.id,
            params: self.params.clone(),
            ret: self.ret,
            enter: self.enter.clone(),
            exit: self.exit.clone(),
            enter_keys: self.enter_keys.iter().map(|(k, v)| (*k, *v)).collect(),
            exit_keys: self.exit_keys.iter().map(|(k, v)| (*k, *v)).collect(),
            watches: self
                .watches
                .iter()
                .map(|(label, e, x, ty)| {
                    let ty = match ty {
                        WatchType::Typed(t, _, module) => StoredWatchType::Typed(*t, *module),
                        WatchType::Hint(h) => StoredWatchType::Hint(h.clone()),
                        WatchType::Expr(_) => StoredWatchType::Hint("expr".into()),
                    };
                    (label.clone(), *e, *x, ty)
                })
                .collect(),
            exprs: self.exprs.clone(),
            stack_bytes: self.stack_bytes,
            depth: self.depth,
            truncated: self.truncated,
        }
    }

    /// Rebuilds a stored plan; `table` gives an image's type table by index
    /// (`None` when the store lacks it: the plan cannot be used).
    pub fn from_stored(
        s: StoredPlan,
        table: &dyn Fn(u32) -> Option<std::sync::Arc<TypeTable>>,
    ) -> Option<FunctionPlan> {
        let mut watches = Vec::with_capacity(s.watches.len());
        for (label, e, x, ty) in s.watches {
            let ty = match ty {
                StoredWatchType::Typed(t, module) => WatchType::Typed(t, table(module)?, module),
                StoredWatchType::Hint(h) => WatchType::Hint(h),
            };
            watches.push((label, e, x, ty));
        }
        Some(FunctionPlan {
            id: s.id,
            params: s.params,
            ret: s.ret,
            enter: s.enter,
            exit: s.exit,
            enter_keys: s.enter_keys.into_iter().collect(),
            exit_keys: s.exit_keys.into_iter().collect(),
            watches,
            exprs: s.exprs,
            stack_bytes: s.stack_bytes,
            depth: s.depth,
            truncated: s.truncated,
        })
    }
}
