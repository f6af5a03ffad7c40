//! [`Money`]: an amount in an ISO-4217 currency, exact to the currency's minor unit.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The largest amount in minor units: 2^53 − 1, the largest integer every JSON client
/// (JavaScript's included) reads exactly.
pub const MAX_MINOR_UNITS: u64 = 9_007_199_254_740_991;

/// An ISO 4217 currency that has a minor unit (`EUR`: 2 digits, `JPY`: 0, `KWD`: 3),
/// checked against the list the `iso_currency` crate maintains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency {
    currency: iso_currency::Currency,
    digits: u8,
}

impl Currency {
    /// Reads an uppercase ISO 4217 code.
    pub fn parse(code: &str) -> Result<Self, MoneyError> {
        let Some(currency) = iso_currency::Currency::from_code(code) else {
            return Err(match iso_currency::Currency::from_code(&code.to_ascii_uppercase()) {
                Some(currency) => MoneyError::CurrencyCase(currency.code()),
                None => MoneyError::UnknownCurrency,
            });
        };
        match currency.exponent().and_then(|digits| u8::try_from(digits).ok()) {
            Some(digits) => Ok(Self { currency, digits }),
            None => Err(MoneyError::NoMinorUnit(currency.code())),
        }
    }

    /// The three-letter code.
    pub fn code(&self) -> &'static str {
        self.currency.code()
    }

    /// How many decimal places an amount may have: 2 for EUR, 0 for JPY, 3 for KWD.
    pub fn minor_digits(&self) -> u8 {
        self.digits
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// An amount of money: never a float. Written `{"amount": "12.50", "currency": "EUR"}` (a
/// decimal string) or `{"amount_minor": 1250, "currency": "EUR"}` (integer minor units);
/// always written back in the first form.
///
/// Refused, each said: a float amount, both or neither of `amount`/`amount_minor`, more
/// decimal places than the currency has (`"12.505"` EUR, `"5.5"` JPY), negative amounts
/// (a refund is its own action, not a negative payment), amounts beyond
/// [`MAX_MINOR_UNITS`], thousands separators or currency signs, a currency that is not in
/// ISO 4217, one in lowercase, and codes without a minor unit (gold, test codes).
///
/// ```
/// use toolgate_runtime::types::Money;
/// let price = Money::parse("12.5", "EUR").unwrap();
/// assert_eq!(price.minor_units(), 1250);
/// assert_eq!(price.to_string(), "12.50 EUR");
/// let yen = Money::parse("5.5", "JPY").unwrap_err();
/// assert!(yen.to_string().contains("JPY has no decimal places"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Money {
    minor: u64,
    currency: Currency,
}

/// Why a value is not [`Money`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MoneyError {
    /// Not a JSON object.
    #[error("must be an object like {{\"amount\": \"12.50\", \"currency\": \"EUR\"}}")]
    NotAnObject,
    /// No `currency`.
    #[error("has no `currency`: add its ISO 4217 code, e.g. \"EUR\"")]
    MissingCurrency,
    /// No amount, or both forms.
    #[error(
        "needs exactly one of `amount` (a decimal string, \"12.50\") and `amount_minor` (integer minor units, 1250)"
    )]
    AmountForms,
    /// A JSON number as `amount`.
    #[error(
        "has a number as `amount`: write it as a decimal string (\"12.50\") or give integer minor units in `amount_minor` (1250), never a float"
    )]
    FloatAmount,
    /// `amount_minor` that is not a whole number.
    #[error("has an `amount_minor` that is not a whole number of minor units (1250 for 12.50 EUR)")]
    MinorNotInteger,
    /// A field money does not have.
    #[error("has `{0}`, which money does not have: only `amount` or `amount_minor`, and `currency`")]
    UnknownField(String),
    /// Below zero.
    #[error("is negative: amounts are zero or more (a refund is its own action)")]
    Negative,
    /// Not digits with an optional `.` and decimals.
    #[error(
        "has an `amount` that is not a plain decimal: digits and one `.`, e.g. \"1234.50\" (no thousands separators, spaces or currency signs)"
    )]
    NotDecimal,
    /// More decimal places than the currency has.
    #[error("has {given} decimal places, but {currency} has {}", places(.allowed))]
    TooManyDecimals {
        /// The currency.
        currency: &'static str,
        /// The decimal places given.
        given: usize,
        /// The decimal places the currency has.
        allowed: u8,
    },
    /// Beyond [`MAX_MINOR_UNITS`].
    #[error("is too large: at most {MAX_MINOR_UNITS} minor units")]
    TooLarge,
    /// Not an ISO 4217 code.
    #[error("has a `currency` that is not an ISO 4217 code: e.g. \"EUR\", \"USD\", \"JPY\"")]
    UnknownCurrency,
    /// A real code in the wrong case.
    #[error("has the `currency` in lowercase: ISO 4217 codes are uppercase, `{0}`")]
    CurrencyCase(&'static str),
    /// A code with no minor unit.
    #[error("has `currency` {0}, which has no minor unit (a metal, fund or test code): it is not money here")]
    NoMinorUnit(&'static str),
}

/// "2", or "no decimal places" for a currency without any.
fn places(allowed: &u8) -> String {
    if *allowed == 0 { "no decimal places".to_string() } else { allowed.to_string() }
}

impl Money {
    /// An amount given in minor units (cents for EUR, yen for JPY).
    pub fn from_minor_units(minor: u64, currency: Currency) -> Result<Self, MoneyError> {
        if minor > MAX_MINOR_UNITS {
            return Err(MoneyError::TooLarge);
        }
        Ok(Self { minor, currency })
    }

    /// An amount written as a decimal string in `currency` (`"12.50"`, `"12.5"`, `"12"`).
    pub fn parse(amount: &str, currency: &str) -> Result<Self, MoneyError> {
        let currency = Currency::parse(currency)?;
        if amount.starts_with('-') {
            return Err(MoneyError::Negative);
        }
        let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) || amount.ends_with('.') {
            return Err(MoneyError::NotDecimal);
        }
        if fraction.len() > usize::from(currency.digits) {
            let (code, allowed) = (currency.code(), currency.digits);
            return Err(MoneyError::TooManyDecimals { currency: code, given: fraction.len(), allowed });
        }
        let scale = 10u64.pow(u32::from(currency.digits));
        let whole: u64 = whole.parse().map_err(|_| MoneyError::TooLarge)?;
        let padded = format!("{fraction:0<width$}", width = usize::from(currency.digits));
        let fraction: u64 = if padded.is_empty() { 0 } else { padded.parse().map_err(|_| MoneyError::NotDecimal)? };
        let minor = whole.checked_mul(scale).and_then(|m| m.checked_add(fraction)).ok_or(MoneyError::TooLarge)?;
        Self::from_minor_units(minor, currency)
    }

    /// Reads the JSON form: `{amount | amount_minor, currency}`.
    pub fn from_json(value: &Value) -> Result<Self, MoneyError> {
        let Value::Object(map) = value else { return Err(MoneyError::NotAnObject) };
        if let Some(unknown) = map.keys().find(|k| !matches!(k.as_str(), "amount" | "amount_minor" | "currency")) {
            return Err(MoneyError::UnknownField(unknown.clone()));
        }
        let currency = match map.get("currency") {
            Some(Value::String(code)) => code,
            Some(_) => return Err(MoneyError::UnknownCurrency),
            None => return Err(MoneyError::MissingCurrency),
        };
        match (map.get("amount"), map.get("amount_minor")) {
            (Some(Value::String(amount)), None) => Self::parse(amount, currency),
            (Some(Value::Number(_)), None) => Err(MoneyError::FloatAmount),
            (Some(_), None) => Err(MoneyError::NotDecimal),
            (None, Some(Value::Number(n))) => {
                let currency = Currency::parse(currency)?;
                match (n.as_u64(), n.as_i64()) {
                    (Some(minor), _) => Self::from_minor_units(minor, currency),
                    (None, Some(_)) => Err(MoneyError::Negative),
                    (None, None) if n.as_f64().is_some_and(|f| f < 0.0) => Err(MoneyError::Negative),
                    (None, None) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => Err(MoneyError::TooLarge),
                    (None, None) => Err(MoneyError::MinorNotInteger),
                }
            }
            (None, Some(_)) => Err(MoneyError::MinorNotInteger),
            _ => Err(MoneyError::AmountForms),
        }
    }

    /// The amount in minor units (1250 for 12.50 EUR).
    pub fn minor_units(&self) -> u64 {
        self.minor
    }

    /// The currency.
    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// The amount as a decimal string with exactly the currency's decimal places.
    pub fn amount(&self) -> String {
        let digits = u32::from(self.currency.digits);
        if digits == 0 {
            return self.minor.to_string();
        }
        let scale = 10u64.pow(digits);
        format!("{}.{:0width$}", self.minor / scale, self.minor % scale, width = digits as usize)
    }
}

impl fmt::Display for Money {
    /// `12.50 EUR`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount(), self.currency.code())
    }
}

impl Serialize for Money {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Money", 2)?;
        out.serialize_field("amount", &self.amount())?;
        out.serialize_field("currency", self.currency.code())?;
        out.end()
    }
}

impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(&value).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Money {
    fn schema_name() -> Cow<'static, str> {
        "Money".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "An amount of money, never a float: `amount` as a decimal string with at most the currency's decimal places (2 for EUR, 0 for JPY), or `amount_minor` as integer minor units; `currency` an ISO 4217 code.",
            "properties": {
                "amount": {
                    "type": "string",
                    "pattern": r"^\d+(\.\d+)?$",
                    "description": "The amount as a decimal string, e.g. \"12.50\".",
                    "examples": ["12.50"],
                },
                "amount_minor": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_MINOR_UNITS,
                    "description": "The amount in minor units (1250 for 12.50 EUR), instead of `amount`.",
                },
                "currency": {
                    "type": "string",
                    "pattern": "^[A-Z]{3}$",
                    "description": "ISO 4217 currency code, uppercase.",
                    "examples": ["EUR"],
                },
            },
            "required": ["currency"],
            "oneOf": [{ "required": ["amount"] }, { "required": ["amount_minor"] }],
            "additionalProperties": false,
            "examples": [{ "amount": "12.50", "currency": "EUR" }],
            "x-toolgate": "money",
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_both_forms_to_the_currency_s_minor_unit() {
        for (value, minor, shown) in [
            (json!({"amount": "12.50", "currency": "EUR"}), 1250, "12.50 EUR"),
            (json!({"amount": "12.5", "currency": "EUR"}), 1250, "12.50 EUR"),
            (json!({"amount": "12", "currency": "EUR"}), 1200, "12.00 EUR"),
            (json!({"amount": "0", "currency": "EUR"}), 0, "0.00 EUR"),
            (json!({"amount_minor": 1250, "currency": "EUR"}), 1250, "12.50 EUR"),
            (json!({"amount": "500", "currency": "JPY"}), 500, "500 JPY"),
            (json!({"amount": "1.234", "currency": "KWD"}), 1234, "1.234 KWD"),
            (json!({"amount": "0.0001", "currency": "CLF"}), 1, "0.0001 CLF"),
            (json!({"amount_minor": MAX_MINOR_UNITS, "currency": "USD"}), MAX_MINOR_UNITS, "90071992547409.91 USD"),
        ] {
            let money = Money::from_json(&value).unwrap_or_else(|e| panic!("{value}: {e}"));
            assert_eq!((money.minor_units(), money.to_string().as_str()), (minor, shown), "{value}");
            let written = serde_json::to_value(money).unwrap();
            assert_eq!(Money::from_json(&written).unwrap(), money, "{written}");
        }
    }

    #[test]
    fn says_what_each_wrong_amount_is() {
        let too_many = |given, allowed, currency| MoneyError::TooManyDecimals { currency, given, allowed };
        for (value, problem) in [
            (json!({"amount": 12.5, "currency": "EUR"}), MoneyError::FloatAmount),
            (json!({"amount": 12, "currency": "EUR"}), MoneyError::FloatAmount),
            (json!({"amount": "12.505", "currency": "EUR"}), too_many(3, 2, "EUR")),
            (json!({"amount": "5.5", "currency": "JPY"}), too_many(1, 0, "JPY")),
            (json!({"amount": "1.2345", "currency": "KWD"}), too_many(4, 3, "KWD")),
            (json!({"amount": "-5.00", "currency": "EUR"}), MoneyError::Negative),
            (json!({"amount_minor": -500, "currency": "EUR"}), MoneyError::Negative),
            (json!({"amount_minor": 12.5, "currency": "EUR"}), MoneyError::MinorNotInteger),
            (json!({"amount_minor": "1250", "currency": "EUR"}), MoneyError::MinorNotInteger),
            (json!({"amount_minor": MAX_MINOR_UNITS + 1, "currency": "EUR"}), MoneyError::TooLarge),
            (json!({"amount_minor": 1e30, "currency": "EUR"}), MoneyError::TooLarge),
            (json!({"amount": "90071992547409.92", "currency": "EUR"}), MoneyError::TooLarge),
            (json!({"amount": "99999999999999999999999", "currency": "EUR"}), MoneyError::TooLarge),
            (json!({"amount": "1,234.50", "currency": "EUR"}), MoneyError::NotDecimal),
            (json!({"amount": "€12", "currency": "EUR"}), MoneyError::NotDecimal),
            (json!({"amount": "12.", "currency": "EUR"}), MoneyError::NotDecimal),
            (json!({"amount": ".5", "currency": "EUR"}), MoneyError::NotDecimal),
            (json!({"amount": "1e3", "currency": "EUR"}), MoneyError::NotDecimal),
            (json!({"amount": "", "currency": "EUR"}), MoneyError::NotDecimal),
            (json!({"amount": "12.50", "currency": "eur"}), MoneyError::CurrencyCase("EUR")),
            (json!({"amount": "12.50", "currency": "EUX"}), MoneyError::UnknownCurrency),
            (json!({"amount": "12.50", "currency": "€"}), MoneyError::UnknownCurrency),
            (json!({"amount": "1", "currency": "XAU"}), MoneyError::NoMinorUnit("XAU")),
            (json!({"amount": "12.50"}), MoneyError::MissingCurrency),
            (json!({"currency": "EUR"}), MoneyError::AmountForms),
            (json!({"amount": "1", "amount_minor": 100, "currency": "EUR"}), MoneyError::AmountForms),
            (json!({"amount": "1", "currency": "EUR", "tax": "0"}), MoneyError::UnknownField("tax".into())),
            (json!("12.50 EUR"), MoneyError::NotAnObject),
        ] {
            assert_eq!(Money::from_json(&value), Err(problem), "{value}");
        }
    }

    #[test]
    fn messages_say_the_currency_s_decimal_places() {
        let eur = Money::parse("12.505", "EUR").unwrap_err().to_string();
        assert_eq!(eur, "has 3 decimal places, but EUR has 2");
        let float = Money::from_json(&json!({"amount": 12.5, "currency": "EUR"})).unwrap_err().to_string();
        assert!(float.contains("never a float"), "{float}");
    }
}
