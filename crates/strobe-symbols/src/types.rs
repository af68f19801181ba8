//! Source-level types read from DWARF: what a function's parameters and
//! return value are, and what a global holds. Types are interned in a
//! [`TypeTable`]; everything that serializes values walks this graph.

use serde::{Deserialize, Serialize};

/// Index of a type in its [`TypeTable`].
pub type TypeId = u32;

/// One source-level type. `const`/`volatile` qualifiers are transparent;
/// typedefs are kept so values can be shown with the names the code uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Type {
    /// `void` (also what an unknown pointer target becomes).
    Void,
    /// Integers and characters.
    Int {
        /// Name as written (`int`, `unsigned char`, `u64`).
        name: String,
        /// Size in bytes (1, 2, 4, 8, 16).
        size: u8,
        /// Signed?
        signed: bool,
        /// A character type (`char`, `signed char`, `unsigned char`, Rust `char`).
        is_char: bool,
    },
    /// Floating point.
    Float {
        /// Name as written.
        name: String,
        /// 4 or 8 (other sizes are shown as raw bytes).
        size: u8,
    },
    /// `bool` / `_Bool`.
    Bool {
        /// Size in bytes.
        size: u8,
    },
    /// An enumeration: values shown by variant name.
    Enum {
        /// Name (qualified where the DWARF nests it).
        name: String,
        /// Size in bytes.
        size: u8,
        /// Whether the underlying type is signed.
        signed: bool,
        /// (value, variant name).
        variants: Vec<(i64, String)>,
    },
    /// A pointer or C++ reference.
    Pointer {
        /// The pointee (`Void` when untyped or unknown).
        target: TypeId,
        /// A C++ `&` / `&&` reference rather than a pointer.
        reference: bool,
    },
    /// A struct, class or union with its layout.
    Struct {
        /// Name (qualified), or `(anonymous)`.
        name: String,
        /// Size in bytes.
        size: u64,
        /// Members at their byte offsets (bitfields carry their bit range).
        members: Vec<Member>,
        /// A union: all members at offset 0.
        is_union: bool,
        /// The ABI passes it by invisible reference (DWARF 5 `DW_CC_pass_by_reference`).
        by_reference: bool,
    },
    /// A fixed-size array.
    Array {
        /// Element type.
        elem: TypeId,
        /// Element count (`None` for `T[]`).
        count: Option<u64>,
    },
    /// A typedef (or Rust type alias); also a `const`/`volatile`/`restrict`
    /// qualifier, with an empty name.
    Typedef {
        /// The alias (empty for a qualifier: named as its target).
        name: String,
        /// What it stands for.
        target: TypeId,
    },
    /// A function type (only seen behind pointers).
    Function,
    /// A type the DWARF only declares, or one Strobe does not model.
    Opaque {
        /// Its name, when known.
        name: String,
        /// Its size, when known.
        size: Option<u64>,
    },
}

/// A member of a struct, class or union.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Member name (`(anonymous)` for unnamed members).
    pub name: String,
    /// Byte offset in the enclosing struct.
    pub offset: u64,
    /// The member's type.
    pub ty: TypeId,
    /// For bitfields: (bit offset within the storage at `offset`, bit size).
    pub bits: Option<(u32, u32)>,
}

/// A function's signature: parameters in order and the return type.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Signature {
    /// (name, type); unnamed parameters get `argN`; C++ `this` is included.
    pub params: Vec<(String, TypeId)>,
    /// Return type; `None` for `void`.
    pub ret: Option<TypeId>,
    /// Ends in `...`.
    pub variadic: bool,
    /// Where each parameter is when the function is entered, as far as the
    /// DWARF says (optimized code describes it; `-O0` code only describes
    /// stack slots valid after the prologue, read as `Unknown`); one per
    /// parameter, empty when not read.
    #[serde(default)]
    pub entry_locs: Vec<EntryLoc>,
    /// `DW_CC_nocall`: the compiler changed how the function is called
    /// (arguments dropped or moved, return value removed); only
    /// `entry_locs` can be trusted.
    #[serde(default)]
    pub nocall: bool,
}

/// Where a parameter is at a function's entry, per its DWARF location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryLoc {
    /// Nothing usable said: follow the calling convention.
    Unknown,
    /// In this register (DWARF x86-64 numbering: 5 = rdi, 4 = rsi, …, 17 = xmm0).
    Register(u16),
    /// A constant the compiler propagated into the function.
    Const(i64),
    /// Not available at entry (removed by the optimizer).
    OptimizedOut,
}

/// Interned types; id 0 is always `void`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeTable {
    types: Vec<Type>,
}

impl Default for TypeTable {
    fn default() -> Self {
        TypeTable {
            types: vec![Type::Void],
        }
    }
}

/// The id of `void` in every table.
pub const VOID: TypeId = 0;

impl TypeTable {
    /// Adds a type; returns its id.
    pub fn push(&mut self, t: Type) -> TypeId {
        self.types.push(t);
        (self.types.len() - 1) as TypeId
    }

    /// The id of a type equal to `t`, added when the table has none (for
    /// types DWARF does not spell, such as a slice's `T[n]`).
    pub fn intern(&mut self, t: Type) -> TypeId {
        match self.types.iter().position(|x| *x == t) {
            Some(i) => i as TypeId,
            None => self.push(t),
        }
    }

    /// Replaces a placeholder (used to tie recursive types together).
    pub fn set(&mut self, id: TypeId, t: Type) {
        self.types[id as usize] = t;
    }

    /// The type behind an id (`void` for ids out of range).
    pub fn get(&self, id: TypeId) -> &Type {
        self.types.get(id as usize).unwrap_or(&Type::Void)
    }

    /// Follows typedefs to the underlying type (bounded, cycles end in void).
    pub fn strip(&self, mut id: TypeId) -> TypeId {
        for _ in 0..32 {
            match self.get(id) {
                Type::Typedef { target, .. } => id = *target,
                _ => return id,
            }
        }
        VOID
    }

    /// Size in bytes, when known.
    pub fn size_of(&self, id: TypeId) -> Option<u64> {
        match self.get(self.strip(id)) {
            Type::Void | Type::Function => None,
            Type::Int { size, .. } | Type::Float { size, .. } | Type::Bool { size } => {
                Some(*size as u64)
            }
            Type::Enum { size, .. } => Some(*size as u64),
            Type::Pointer { .. } => Some(8),
            Type::Struct { size, .. } => Some(*size),
            Type::Array { elem, count } => Some(self.size_of(*elem)? * (*count)?),
            Type::Opaque { size, .. } => *size,
            Type::Typedef { .. } => None,
        }
    }

    /// The name code would use for the type (`const char *`-style without qualifiers).
    pub fn name(&self, id: TypeId) -> String {
        self.name_depth(id, 0)
    }

    fn name_depth(&self, id: TypeId, depth: u32) -> String {
        if depth > 8 {
            return "…".into();
        }
        match self.get(id) {
            Type::Void => "void".into(),
            Type::Int { name, .. } | Type::Float { name, .. } | Type::Enum { name, .. } => {
                name.clone()
            }
            Type::Bool { .. } => "bool".into(),
            Type::Pointer { target, reference } => {
                let inner = self.name_depth(*target, depth + 1);
                if *reference {
                    format!("{inner} &")
                } else {
                    format!("{inner} *")
                }
            }
            // A qualifier (`const`, `volatile`) is an unnamed typedef.
            Type::Typedef { name, target } if name.is_empty() => {
                self.name_depth(*target, depth + 1)
            }
            Type::Struct { name, .. } | Type::Typedef { name, .. } => name.clone(),
            Type::Array { elem, count } => match count {
                Some(n) => format!("{}[{n}]", self.name_depth(*elem, depth + 1)),
                None => format!("{}[]", self.name_depth(*elem, depth + 1)),
            },
            Type::Function => "fn".into(),
            Type::Opaque { name, .. } => name.clone(),
        }
    }

    /// Number of types (including `void`).
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Only `void`?
    pub fn is_empty(&self) -> bool {
        self.types.len() <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sizes_and_typedefs() {
        let mut t = TypeTable::default();
        let ch = t.push(Type::Int {
            name: "char".into(),
            size: 1,
            signed: true,
            is_char: true,
        });
        let p = t.push(Type::Pointer {
            target: ch,
            reference: false,
        });
        let arr = t.push(Type::Array {
            elem: ch,
            count: Some(16),
        });
        let td = t.push(Type::Typedef {
            name: "name_t".into(),
            target: arr,
        });
        assert_eq!(t.name(p), "char *");
        assert_eq!(t.name(arr), "char[16]");
        assert_eq!(t.size_of(td), Some(16));
        assert_eq!(t.strip(td), arr);
        assert_eq!(t.size_of(VOID), None);
        // A typedef cycle (malformed DWARF) ends in void instead of looping.
        let a = t.push(Type::Void);
        t.set(
            a,
            Type::Typedef {
                name: "loop".into(),
                target: a,
            },
        );
        assert_eq!(t.strip(a), VOID);
        // Interning finds an equal type before adding one.
        let n = t.len();
        let again = t.intern(Type::Array {
            elem: ch,
            count: Some(16),
        });
        assert_eq!((again, t.len()), (arr, n));
        let three = t.intern(Type::Array {
            elem: ch,
            count: Some(3),
        });
        assert_eq!(
            (three, t.len(), t.name(three)),
            (n as TypeId, n + 1, "char[3]".into())
        );
    }
}
