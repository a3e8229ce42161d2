//! The one table of built-in functions: every name the language knows, with its accepted
//! argument counts and its kind (a scalar function of some family, an aggregate, or a function
//! of the service this implementation refuses). The planner reads it to check calls and the
//! evaluator dispatches on `Builtin`, so the two can never disagree about a name.
//!
//! It computes nothing: scalar functions are in `functions/`, aggregates in `exec.rs`.

use crate::error::QueryError;

/// Which module of `functions/` computes a scalar built-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Types,
    Strings,
    Math,
    Arrays,
    Dates,
    /// VectorDistance.
    Vectors,
    /// The ST_ functions over GeoJSON.
    Spatial,
    /// The full-text predicates, and the internal word count and BM25 score the SDKs'
    /// hybrid search pipelines run.
    Text,
    /// FullTextScore and RRF: allowed only in ORDER BY RANK, which ranks by them
    /// (`ranking.rs`) without evaluating them as expressions.
    Rank,
}

/// What a built-in is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Scalar(Family),
    /// COUNT, SUM, AVG, MIN, MAX: computed over rows by `exec.rs`.
    Aggregate,
    /// A function of the service refused rather than approximated.
    Refused,
}

/// Declares `Builtin` and its table from one list, so a name, its arity and its kind are
/// written once.
macro_rules! builtins {
    ($($variant:ident = $name:literal, ($fewest:expr, $most:expr), $kind:expr;)*) => {
        /// A built-in function of the language.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Builtin {
            $($variant,)*
        }

        /// Every built-in with its upper-case name, argument counts (fewest, most) and kind.
        const TABLE: &[(Builtin, &str, (usize, usize), Kind)] = &[
            $((Builtin::$variant, $name, ($fewest, $most), $kind),)*
        ];
    };
}

builtins! {
    IsArray = "IS_ARRAY", (1, 1), Kind::Scalar(Family::Types);
    IsBool = "IS_BOOL", (1, 1), Kind::Scalar(Family::Types);
    IsDefined = "IS_DEFINED", (1, 1), Kind::Scalar(Family::Types);
    IsNull = "IS_NULL", (1, 1), Kind::Scalar(Family::Types);
    IsNumber = "IS_NUMBER", (1, 1), Kind::Scalar(Family::Types);
    IsObject = "IS_OBJECT", (1, 1), Kind::Scalar(Family::Types);
    IsPrimitive = "IS_PRIMITIVE", (1, 1), Kind::Scalar(Family::Types);
    IsString = "IS_STRING", (1, 1), Kind::Scalar(Family::Types);
    IsInteger = "IS_INTEGER", (1, 1), Kind::Scalar(Family::Types);
    IsFiniteNumber = "IS_FINITE_NUMBER", (1, 1), Kind::Scalar(Family::Types);
    IsDateTime = "IS_DATETIME", (1, 1), Kind::Scalar(Family::Types);
    StringToArray = "STRINGTOARRAY", (1, 1), Kind::Scalar(Family::Types);
    StringToBoolean = "STRINGTOBOOLEAN", (1, 1), Kind::Scalar(Family::Types);
    StringToNull = "STRINGTONULL", (1, 1), Kind::Scalar(Family::Types);
    StringToNumber = "STRINGTONUMBER", (1, 1), Kind::Scalar(Family::Types);
    StringToObject = "STRINGTOOBJECT", (1, 1), Kind::Scalar(Family::Types);
    ToString = "TOSTRING", (1, 1), Kind::Scalar(Family::Types);
    Iif = "IIF", (3, 3), Kind::Scalar(Family::Types);
    Choose = "CHOOSE", (2, usize::MAX), Kind::Scalar(Family::Types);
    ObjectToArray = "OBJECTTOARRAY", (1, 3), Kind::Scalar(Family::Types);
    Concat = "CONCAT", (2, usize::MAX), Kind::Scalar(Family::Strings);
    Contains = "CONTAINS", (2, 3), Kind::Scalar(Family::Strings);
    StartsWith = "STARTSWITH", (2, 3), Kind::Scalar(Family::Strings);
    EndsWith = "ENDSWITH", (2, 3), Kind::Scalar(Family::Strings);
    StringEquals = "STRINGEQUALS", (2, 3), Kind::Scalar(Family::Strings);
    RegexMatch = "REGEXMATCH", (2, 3), Kind::Scalar(Family::Strings);
    Substring = "SUBSTRING", (3, 3), Kind::Scalar(Family::Strings);
    IndexOf = "INDEX_OF", (2, 3), Kind::Scalar(Family::Strings);
    LastIndexOf = "LASTINDEXOF", (2, 2), Kind::Scalar(Family::Strings);
    Replace = "REPLACE", (3, 3), Kind::Scalar(Family::Strings);
    Replicate = "REPLICATE", (2, 2), Kind::Scalar(Family::Strings);
    Left = "LEFT", (2, 2), Kind::Scalar(Family::Strings);
    Right = "RIGHT", (2, 2), Kind::Scalar(Family::Strings);
    Reverse = "REVERSE", (1, 1), Kind::Scalar(Family::Strings);
    Length = "LENGTH", (1, 1), Kind::Scalar(Family::Strings);
    Lower = "LOWER", (1, 1), Kind::Scalar(Family::Strings);
    Upper = "UPPER", (1, 1), Kind::Scalar(Family::Strings);
    LeftTrim = "LTRIM", (1, 1), Kind::Scalar(Family::Strings);
    RightTrim = "RTRIM", (1, 1), Kind::Scalar(Family::Strings);
    Trim = "TRIM", (1, 1), Kind::Scalar(Family::Strings);
    Abs = "ABS", (1, 1), Kind::Scalar(Family::Math);
    Ceiling = "CEILING", (1, 1), Kind::Scalar(Family::Math);
    Floor = "FLOOR", (1, 1), Kind::Scalar(Family::Math);
    Truncate = "TRUNC", (1, 1), Kind::Scalar(Family::Math);
    Sign = "SIGN", (1, 1), Kind::Scalar(Family::Math);
    SquareRoot = "SQRT", (1, 1), Kind::Scalar(Family::Math);
    Square = "SQUARE", (1, 1), Kind::Scalar(Family::Math);
    Exponential = "EXP", (1, 1), Kind::Scalar(Family::Math);
    Log10 = "LOG10", (1, 1), Kind::Scalar(Family::Math);
    Sine = "SIN", (1, 1), Kind::Scalar(Family::Math);
    Cosine = "COS", (1, 1), Kind::Scalar(Family::Math);
    Tangent = "TAN", (1, 1), Kind::Scalar(Family::Math);
    Cotangent = "COT", (1, 1), Kind::Scalar(Family::Math);
    ArcSine = "ASIN", (1, 1), Kind::Scalar(Family::Math);
    ArcCosine = "ACOS", (1, 1), Kind::Scalar(Family::Math);
    ArcTangent = "ATAN", (1, 1), Kind::Scalar(Family::Math);
    Degrees = "DEGREES", (1, 1), Kind::Scalar(Family::Math);
    Radians = "RADIANS", (1, 1), Kind::Scalar(Family::Math);
    IntBitNot = "INTBITNOT", (1, 1), Kind::Scalar(Family::Math);
    Round = "ROUND", (1, 2), Kind::Scalar(Family::Math);
    Log = "LOG", (1, 2), Kind::Scalar(Family::Math);
    NumberBin = "NUMBERBIN", (1, 2), Kind::Scalar(Family::Math);
    Power = "POWER", (2, 2), Kind::Scalar(Family::Math);
    ArcTangent2 = "ATN2", (2, 2), Kind::Scalar(Family::Math);
    IntAdd = "INTADD", (2, 2), Kind::Scalar(Family::Math);
    IntSub = "INTSUB", (2, 2), Kind::Scalar(Family::Math);
    IntMul = "INTMUL", (2, 2), Kind::Scalar(Family::Math);
    IntDiv = "INTDIV", (2, 2), Kind::Scalar(Family::Math);
    IntMod = "INTMOD", (2, 2), Kind::Scalar(Family::Math);
    IntBitAnd = "INTBITAND", (2, 2), Kind::Scalar(Family::Math);
    IntBitOr = "INTBITOR", (2, 2), Kind::Scalar(Family::Math);
    IntBitXor = "INTBITXOR", (2, 2), Kind::Scalar(Family::Math);
    IntBitLeftShift = "INTBITLEFTSHIFT", (2, 2), Kind::Scalar(Family::Math);
    IntBitRightShift = "INTBITRIGHTSHIFT", (2, 2), Kind::Scalar(Family::Math);
    Pi = "PI", (0, 0), Kind::Scalar(Family::Math);
    ArrayContains = "ARRAY_CONTAINS", (2, 3), Kind::Scalar(Family::Arrays);
    ArrayContainsAny = "ARRAY_CONTAINS_ANY", (2, usize::MAX), Kind::Scalar(Family::Arrays);
    ArrayContainsAll = "ARRAY_CONTAINS_ALL", (2, usize::MAX), Kind::Scalar(Family::Arrays);
    ArrayLength = "ARRAY_LENGTH", (1, 1), Kind::Scalar(Family::Arrays);
    ArraySum = "ARRAY_SUM", (1, 1), Kind::Scalar(Family::Arrays);
    ArrayAverage = "ARRAY_AVG", (1, 1), Kind::Scalar(Family::Arrays);
    ArrayMin = "ARRAY_MIN", (1, 1), Kind::Scalar(Family::Arrays);
    ArrayMax = "ARRAY_MAX", (1, 1), Kind::Scalar(Family::Arrays);
    ArraySlice = "ARRAY_SLICE", (2, 3), Kind::Scalar(Family::Arrays);
    ArrayConcat = "ARRAY_CONCAT", (2, usize::MAX), Kind::Scalar(Family::Arrays);
    SetIntersect = "SETINTERSECT", (2, 2), Kind::Scalar(Family::Arrays);
    SetUnion = "SETUNION", (2, 2), Kind::Scalar(Family::Arrays);
    GetCurrentDateTime = "GETCURRENTDATETIME", (0, 0), Kind::Scalar(Family::Dates);
    GetCurrentTimestamp = "GETCURRENTTIMESTAMP", (0, 0), Kind::Scalar(Family::Dates);
    GetCurrentTicks = "GETCURRENTTICKS", (0, 0), Kind::Scalar(Family::Dates);
    GetCurrentDateTimeStatic = "GETCURRENTDATETIMESTATIC", (0, 0), Kind::Scalar(Family::Dates);
    GetCurrentTimestampStatic = "GETCURRENTTIMESTAMPSTATIC", (0, 0), Kind::Scalar(Family::Dates);
    GetCurrentTicksStatic = "GETCURRENTTICKSSTATIC", (0, 0), Kind::Scalar(Family::Dates);
    DateTimeAdd = "DATETIMEADD", (3, 3), Kind::Scalar(Family::Dates);
    DateTimeDiff = "DATETIMEDIFF", (3, 3), Kind::Scalar(Family::Dates);
    DateTimePart = "DATETIMEPART", (2, 2), Kind::Scalar(Family::Dates);
    DateTimeBin = "DATETIMEBIN", (2, 4), Kind::Scalar(Family::Dates);
    DateTimeFromParts = "DATETIMEFROMPARTS", (3, 7), Kind::Scalar(Family::Dates);
    DateTimeToTicks = "DATETIMETOTICKS", (1, 1), Kind::Scalar(Family::Dates);
    DateTimeToTimestamp = "DATETIMETOTIMESTAMP", (1, 1), Kind::Scalar(Family::Dates);
    TicksToDateTime = "TICKSTODATETIME", (1, 1), Kind::Scalar(Family::Dates);
    TimestampToDateTime = "TIMESTAMPTODATETIME", (1, 1), Kind::Scalar(Family::Dates);
    Count = "COUNT", (1, 1), Kind::Aggregate;
    Sum = "SUM", (1, 1), Kind::Aggregate;
    Average = "AVG", (1, 1), Kind::Aggregate;
    Min = "MIN", (1, 1), Kind::Aggregate;
    Max = "MAX", (1, 1), Kind::Aggregate;
    CountIf = "COUNTIF", (1, 1), Kind::Aggregate;
    MakeList = "MAKELIST", (1, 1), Kind::Aggregate;
    MakeSet = "MAKESET", (1, 1), Kind::Aggregate;
    Random = "RAND", (0, usize::MAX), Kind::Refused;
    DocumentId = "DOCUMENTID", (0, usize::MAX), Kind::Refused;
    StDistance = "ST_DISTANCE", (2, 2), Kind::Scalar(Family::Spatial);
    StWithin = "ST_WITHIN", (2, 2), Kind::Scalar(Family::Spatial);
    StIntersects = "ST_INTERSECTS", (2, 2), Kind::Scalar(Family::Spatial);
    StIsValid = "ST_ISVALID", (1, 1), Kind::Scalar(Family::Spatial);
    StIsValidDetailed = "ST_ISVALIDDETAILED", (1, 1), Kind::Scalar(Family::Spatial);
    StArea = "ST_AREA", (1, 1), Kind::Scalar(Family::Spatial);
    FullTextContains = "FULLTEXTCONTAINS", (2, 2), Kind::Scalar(Family::Text);
    FullTextContainsAll = "FULLTEXTCONTAINSALL", (2, usize::MAX), Kind::Scalar(Family::Text);
    FullTextContainsAny = "FULLTEXTCONTAINSANY", (2, usize::MAX), Kind::Scalar(Family::Text);
    FullTextScore = "FULLTEXTSCORE", (2, usize::MAX), Kind::Scalar(Family::Rank);
    VectorDistance = "VECTORDISTANCE", (2, 4), Kind::Scalar(Family::Vectors);
    ReciprocalRankFusion = "RRF", (1, usize::MAX), Kind::Scalar(Family::Rank);
    FullTextScoreWithStatistics = "_FULLTEXTSCORE", (5, 5), Kind::Scalar(Family::Text);
    FullTextWordCount = "_FULLTEXTWORDCOUNT", (1, 1), Kind::Scalar(Family::Text);
    VectorScore = "_VECTORSCORE", (2, 4), Kind::Scalar(Family::Vectors);
    DateTimeFormat = "DATETIMEFORMAT", (0, usize::MAX), Kind::Refused;
    ArrayMedian = "ARRAY_MEDIAN", (0, usize::MAX), Kind::Refused;
}

impl Builtin {
    /// The built-in named `name`, in any letter case.
    pub fn lookup(name: &str) -> Option<Builtin> {
        TABLE
            .iter()
            .find(|(_, known, _, _)| known.eq_ignore_ascii_case(name))
            .map(|(builtin, _, _, _)| *builtin)
    }

    fn entry(self) -> &'static (Builtin, &'static str, (usize, usize), Kind) {
        // The table lists the variants in declaration order.
        &TABLE[self as usize]
    }

    /// The name in upper case, as error messages spell it.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The fewest and most arguments accepted (`usize::MAX`: no upper bound).
    pub fn arity(self) -> (usize, usize) {
        self.entry().2
    }

    pub fn kind(self) -> Kind {
        self.entry().3
    }

    pub fn is_aggregate(self) -> bool {
        self.kind() == Kind::Aggregate
    }
}

/// Whether `name` calls an aggregate (COUNT, SUM, AVG, MIN, MAX), in any letter case.
pub fn is_aggregate_name(name: &str) -> bool {
    Builtin::lookup(name).is_some_and(Builtin::is_aggregate)
}

/// Resolves a scalar call before execution: rejects an unknown or refused function, or a
/// wrong number of arguments. Aggregates are checked by the planner, which knows where they
/// may appear.
pub fn check_call(name: &str, argument_count: usize) -> Result<Builtin, QueryError> {
    let builtin = Builtin::lookup(name);
    // Every spatial function is refused, named in the table or not.
    let refused = match builtin {
        Some(builtin) => builtin.kind() == Kind::Refused,
        None => name.to_ascii_uppercase().starts_with("ST_"),
    };
    if refused {
        return Err(QueryError::unsupported(format!(
            "the built-in function '{name}' is not supported"
        )));
    }
    let Some(builtin) = builtin.filter(|builtin| !builtin.is_aggregate()) else {
        return Err(QueryError::semantic(format!(
            "'{name}' is not a recognized built-in function name."
        )));
    };
    let (fewest, most) = builtin.arity();
    if argument_count < fewest || argument_count > most {
        let expected = if fewest == most {
            fewest.to_string()
        } else if most == usize::MAX {
            format!("at least {fewest}")
        } else {
            format!("{fewest} to {most}")
        };
        return Err(QueryError::semantic(format!(
            "The {} function requires {expected} argument(s), got {argument_count}.",
            builtin.name()
        )));
    }
    Ok(builtin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_looks_itself_up_in_either_case() {
        for (index, (builtin, name, _, _)) in TABLE.iter().enumerate() {
            assert_eq!(*builtin as usize, index, "{name} is out of order");
            assert_eq!(builtin.name(), *name);
            assert_eq!(Builtin::lookup(name), Some(*builtin), "{name}");
            assert_eq!(
                Builtin::lookup(&name.to_lowercase()),
                Some(*builtin),
                "{name}"
            );
            assert_eq!(
                Builtin::lookup(&name.to_uppercase()),
                Some(*builtin),
                "{name}"
            );
        }
        assert_eq!(Builtin::lookup("NoSuchFunction"), None);
    }

    #[test]
    fn calls_are_checked_against_the_table() {
        assert_eq!(check_call("startswith", 2), Ok(Builtin::StartsWith));
        assert_eq!(check_call("st_distance", 2), Ok(Builtin::StDistance));
        assert_eq!(check_call("fulltextscore", 2), Ok(Builtin::FullTextScore));
        assert_eq!(
            check_call("_FullTextScore", 5),
            Ok(Builtin::FullTextScoreWithStatistics)
        );
        assert!(matches!(
            check_call("ST_NEW", 1),
            Err(QueryError::Unsupported(_))
        ));
        assert!(check_call("count", 1).is_err());
        assert!(check_call("PI", 1).is_err());
        assert!(check_call("CONCAT", 9).is_ok());
    }
}
