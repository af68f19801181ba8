//! How values that JSON cannot carry as they are travel in agent messages:
//! 64-bit addresses as `"0x…"` strings, 64-bit nanosecond times as decimal
//! strings (a JavaScript number holds only 53 bits), and objects whose key
//! order matters (registers, listed in the order the agent reads them).

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// A 64-bit address on the wire: `"0x…"`, as Frida's `NativePointer`
/// prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hex(pub u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:#x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Hex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        parse_hex(&text)
            .map(Hex)
            .ok_or_else(|| de::Error::custom(format!("{text:?} is not a hex address")))
    }
}

/// `"0x1f"` (or `"1f"`) as a number.
fn parse_hex(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.is_empty() {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Serde helpers for a `u64` sent as a decimal string (monotonic-clock
/// nanoseconds: more than a JavaScript number holds exactly).
pub mod decimal {
    use serde::{Deserialize, Deserializer, Serializer, de};

    /// Writes `n` as a decimal string.
    pub fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(n)
    }

    /// Reads a decimal string; anything else is an error.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse()
            .map_err(|_| de::Error::custom(format!("{text:?} is not a decimal integer")))
    }
}

/// For a field the agent always sends, possibly as `null`: a missing key is
/// an error. (Serde's own handling of `Option` fields would read a missing
/// key as `None`, so a message that lost a field would pass unnoticed.)
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// For a map keyed by numbers (JSON object keys are strings). Serde reads
/// an internally tagged message through a buffer that does not turn string
/// keys into numbers by itself, so the keys are parsed here; one that is not
/// a number is an error.
pub fn numeric_keys<'de, D, K, V>(d: D) -> Result<BTreeMap<K, V>, D::Error>
where
    D: Deserializer<'de>,
    K: std::str::FromStr + Ord,
    V: Deserialize<'de>,
{
    BTreeMap::<String, V>::deserialize(d)?
        .into_iter()
        .map(|(k, v)| match k.parse() {
            Ok(key) => Ok((key, v)),
            Err(_) => Err(de::Error::custom(format!("key {k:?} is not a number"))),
        })
        .collect()
}

/// A JSON object kept in the order its keys came in (a `HashMap` would
/// shuffle a crash report's registers, which are stored as the agent sent them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<V> OrderedMap<V> {
    /// The value under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0));
                while let Some(entry) = a.next_entry()? {
                    out.push(entry);
                }
                Ok(OrderedMap(out))
            }
        }
        d.deserialize_map(Entries(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_addresses_and_decimal_times_round_trip_as_strings() {
        assert_eq!(serde_json::to_string(&Hex(0x7f00)).unwrap(), r#""0x7f00""#);
        assert_eq!(
            serde_json::from_str::<Hex>(r#""0x7f00""#).unwrap(),
            Hex(0x7f00)
        );
        for bad in [r#""""#, r#""0x""#, r#""zz""#, "12", "null"] {
            assert!(serde_json::from_str::<Hex>(bad).is_err(), "{bad}");
        }
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct T {
            #[serde(with = "decimal")]
            ts: u64,
        }
        let t = T { ts: u64::MAX };
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(text, format!(r#"{{"ts":"{}"}}"#, u64::MAX));
        assert_eq!(serde_json::from_str::<T>(&text).unwrap(), t);
        assert!(serde_json::from_str::<T>(r#"{"ts":5}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"ts":"-5"}"#).is_err());
    }

    #[test]
    fn ordered_maps_keep_key_order() {
        let m: OrderedMap<String> =
            serde_json::from_str(r#"{"pc":"0x1","sp":"0x2","rax":"0x3"}"#).unwrap();
        let keys: Vec<&str> = m.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["pc", "sp", "rax"]);
        assert_eq!(m.get("sp").map(String::as_str), Some("0x2"));
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"pc":"0x1","sp":"0x2","rax":"0x3"}"#
        );
    }
}
