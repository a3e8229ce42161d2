//! The syntax tree of a query, and its `Display` back to query text.
//!
//! `Display` writes every operator application in parentheses so that the text parses back to
//! the same tree: `parse(display(ast)) == ast` for every tree the parser builds. The tree holds
//! no bound values: parameters stay `Expr::Parameter` and are looked up when evaluated. Nothing
//! here knows how to evaluate an expression.

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use crate::builtins::Builtin;

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub select: Select,
    pub from: Option<From>,
    pub filter: Option<Expr>,
    pub group_by: Vec<Expr>,
    pub order_by: Vec<SortKey>,
    /// `ORDER BY RANK score`: the one key of `order_by` is a scoring expression (FullTextScore,
    /// VectorDistance or RRF) that ranks rows best first; see `ranking.rs`.
    pub order_by_rank: bool,
    pub offset_limit: Option<OffsetLimit>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub distinct: bool,
    /// `TOP n`: a number literal or a parameter.
    pub top: Option<Expr>,
    pub projection: Projection,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// `SELECT *`
    Star,
    /// `SELECT VALUE expr`
    Value(Expr),
    /// `SELECT a, b AS x`
    Items(Vec<SelectItem>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SelectItem {
    pub expr: Expr,
    pub alias: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct From {
    pub source: Source,
    pub joins: Vec<Source>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// `alias IN collection`: one row per element of the array.
    Iterate { alias: String, collection: Expr },
    /// `collection [AS alias]`: one row binding the whole value (or, for a subquery in a JOIN,
    /// one row per result of the subquery).
    Bind {
        collection: Expr,
        alias: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OffsetLimit {
    pub offset: Expr,
    pub limit: Expr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Negate,
    Plus,
    BitNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    And,
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    BitOr,
    BitXor,
    BitAnd,
    ShiftLeft,
    ShiftRight,
    ShiftRightZeroFill,
    Add,
    Subtract,
    Concat,
    Multiply,
    Divide,
    Modulo,
    Coalesce,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "OR",
            BinaryOp::And => "AND",
            BinaryOp::Equal => "=",
            BinaryOp::NotEqual => "!=",
            BinaryOp::Less => "<",
            BinaryOp::LessOrEqual => "<=",
            BinaryOp::Greater => ">",
            BinaryOp::GreaterOrEqual => ">=",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::BitAnd => "&",
            BinaryOp::ShiftLeft => "<<",
            BinaryOp::ShiftRight => ">>",
            BinaryOp::ShiftRightZeroFill => ">>>",
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Concat => "||",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
            BinaryOp::Coalesce => "??",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `undefined`, the absence of a value.
    Undefined,
    /// null, true, false, a number or a string.
    Literal(Value),
    /// `@name`, without the `@`.
    Parameter(String),
    /// An input alias such as `c`.
    Identifier(String),
    /// `base.name`
    Property(Box<Expr>, String),
    /// `base[index]`
    Index(Box<Expr>, Box<Expr>),
    Array(Vec<Expr>),
    Object(Vec<(String, Expr)>),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `condition ? if_true : if_false`
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    In {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
        negated: bool,
    },
    /// A built-in function or aggregate, name as written. `builtin` is the name resolved
    /// against the table of built-ins when the call is parsed (`None`: unknown, which the
    /// planner refuses), so evaluation never looks a name up again.
    /// `udf.name(...)`: a user-defined function, run by the caller's UDF host if it has one.
    UdfCall {
        name: String,
        args: Vec<Expr>,
    },
    Call {
        name: String,
        args: Vec<Expr>,
        builtin: Option<Builtin>,
    },
    /// `EXISTS(SELECT ...)`
    Exists(Box<Query>),
    /// `ARRAY(SELECT ...)`
    ArrayQuery(Box<Query>),
    /// `(SELECT ...)`: the first result, or undefined.
    Subquery(Box<Query>),
}

/// Writes a string as a double-quoted literal the lexer reads back unchanged.
fn write_string(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    match serde_json::to_string(text) {
        Ok(quoted) => f.write_str(&quoted),
        Err(_) => Err(fmt::Error),
    }
}

impl Expr {
    /// The string this expression is before any row is read: a string literal, or a parameter
    /// bound to a string. Used to compile patterns once at prepare.
    pub fn known_string(&self, parameters: &HashMap<String, Value>) -> Option<String> {
        match self {
            Expr::Literal(Value::String(text)) => Some(text.clone()),
            Expr::Parameter(name) => match parameters.get(name) {
                Some(Value::String(text)) => Some(text.clone()),
                _ => None,
            },
            _ => None,
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Undefined => f.write_str("undefined"),
            Expr::Literal(Value::String(text)) => write_string(f, text),
            // Negative numbers are written in parentheses so `a - -1` stays unambiguous.
            Expr::Literal(Value::Number(number)) if number.as_f64().is_some_and(|n| n < 0.0) => {
                write!(f, "({number})")
            }
            Expr::Literal(value) => write!(f, "{value}"),
            Expr::Parameter(name) => write!(f, "@{name}"),
            Expr::Identifier(name) => f.write_str(name),
            Expr::Property(base, name) => write!(f, "{base}.{name}"),
            Expr::Index(base, index) => write!(f, "{base}[{index}]"),
            Expr::Array(items) => {
                f.write_str("[")?;
                write_list(f, items)?;
                f.write_str("]")
            }
            Expr::Object(fields) => {
                f.write_str("{")?;
                for (position, (name, value)) in fields.iter().enumerate() {
                    if position > 0 {
                        f.write_str(", ")?;
                    }
                    write_string(f, name)?;
                    write!(f, ": {value}")?;
                }
                f.write_str("}")
            }
            Expr::Unary(UnaryOp::Not, operand) => write!(f, "(NOT {operand})"),
            Expr::Unary(UnaryOp::Negate, operand) => write!(f, "(-{operand})"),
            Expr::Unary(UnaryOp::Plus, operand) => write!(f, "(+{operand})"),
            Expr::Unary(UnaryOp::BitNot, operand) => write!(f, "(~{operand})"),
            Expr::Binary(op, left, right) => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Conditional(condition, if_true, if_false) => {
                write!(f, "({condition} ? {if_true} : {if_false})")
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({expr} {not}BETWEEN {low} AND {high})")
            }
            Expr::In {
                expr,
                list,
                negated,
            } => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({expr} {not}IN (")?;
                write_list(f, list)?;
                f.write_str("))")
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({expr} {not}LIKE {pattern}")?;
                if let Some(escape) = escape {
                    write!(f, " ESCAPE {escape}")?;
                }
                f.write_str(")")
            }
            Expr::UdfCall { name, args } => {
                write!(f, "udf.{name}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            Expr::Call { name, args, .. } => {
                write!(f, "{name}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            Expr::Exists(query) => write!(f, "EXISTS({query})"),
            Expr::ArrayQuery(query) => write!(f, "ARRAY({query})"),
            Expr::Subquery(query) => write!(f, "({query})"),
        }
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (position, item) in items.iter().enumerate() {
        if position > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Iterate { alias, collection } => write!(f, "{alias} IN {collection}"),
            Source::Bind {
                collection,
                alias: Some(alias),
            } => write!(f, "{collection} AS {alias}"),
            Source::Bind {
                collection,
                alias: None,
            } => write!(f, "{collection}"),
        }
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        if self.select.distinct {
            f.write_str("DISTINCT ")?;
        }
        if let Some(top) = &self.select.top {
            write!(f, "TOP {top} ")?;
        }
        match &self.select.projection {
            Projection::Star => f.write_str("*")?,
            Projection::Value(expr) => write!(f, "VALUE {expr}")?,
            Projection::Items(items) => {
                for (position, item) in items.iter().enumerate() {
                    if position > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", item.expr)?;
                    if let Some(alias) = &item.alias {
                        write!(f, " AS {alias}")?;
                    }
                }
            }
        }
        if let Some(from) = &self.from {
            write!(f, " FROM {}", from.source)?;
            for join in &from.joins {
                write!(f, " JOIN {join}")?;
            }
        }
        if let Some(filter) = &self.filter {
            write!(f, " WHERE {filter}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            write_list(f, &self.group_by)?;
        }
        if self.order_by_rank {
            if let Some(key) = self.order_by.first() {
                write!(f, " ORDER BY RANK {}", key.expr)?;
            }
        } else if !self.order_by.is_empty() {
            f.write_str(" ORDER BY ")?;
            for (position, key) in self.order_by.iter().enumerate() {
                if position > 0 {
                    f.write_str(", ")?;
                }
                write!(
                    f,
                    "{} {}",
                    key.expr,
                    if key.descending { "DESC" } else { "ASC" }
                )?;
            }
        }
        if let Some(offset_limit) = &self.offset_limit {
            write!(
                f,
                " OFFSET {} LIMIT {}",
                offset_limit.offset, offset_limit.limit
            )?;
        }
        Ok(())
    }
}

impl Expr {
    /// Calls `visit` on this expression and every expression inside it, not descending into
    /// subqueries (their expressions belong to another scope).
    pub fn walk(&self, visit: &mut dyn FnMut(&Expr)) {
        visit(self);
        match self {
            Expr::Undefined
            | Expr::Literal(_)
            | Expr::Parameter(_)
            | Expr::Identifier(_)
            | Expr::Exists(_)
            | Expr::ArrayQuery(_)
            | Expr::Subquery(_) => {}
            Expr::Property(base, _) => base.walk(visit),
            Expr::Index(base, index) => {
                base.walk(visit);
                index.walk(visit);
            }
            Expr::Array(items)
            | Expr::Call { args: items, .. }
            | Expr::UdfCall { args: items, .. } => {
                items.iter().for_each(|item| item.walk(visit));
            }
            Expr::Object(fields) => fields.iter().for_each(|(_, value)| value.walk(visit)),
            Expr::Unary(_, operand) => operand.walk(visit),
            Expr::Binary(_, left, right) => {
                left.walk(visit);
                right.walk(visit);
            }
            Expr::Conditional(a, b, c)
            | Expr::Between {
                expr: a,
                low: b,
                high: c,
                ..
            } => {
                a.walk(visit);
                b.walk(visit);
                c.walk(visit);
            }
            Expr::In { expr, list, .. } => {
                expr.walk(visit);
                list.iter().for_each(|item| item.walk(visit));
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                ..
            } => {
                expr.walk(visit);
                pattern.walk(visit);
                if let Some(escape) = escape {
                    escape.walk(visit);
                }
            }
        }
    }
}

/// The height of an expression tree, subqueries included, computed without recursion so that
/// it is safe on any tree.
pub fn expression_height(expr: &Expr) -> usize {
    let mut highest = 0;
    let mut pending: Vec<(&Expr, usize)> = vec![(expr, 1)];
    while let Some((node, height)) = pending.pop() {
        highest = highest.max(height);
        let mut children = Vec::new();
        for_each_child(node, &mut |child| children.push(child));
        pending.extend(children.into_iter().map(|child| (child, height + 1)));
    }
    highest
}

/// Calls `visit` on each direct child of `node`, including the expressions of subqueries.
pub fn for_each_child<'a>(node: &'a Expr, visit: &mut dyn FnMut(&'a Expr)) {
    match node {
        Expr::Undefined | Expr::Literal(_) | Expr::Parameter(_) | Expr::Identifier(_) => {}
        Expr::Property(base, _) => visit(base),
        Expr::Index(base, index) => {
            visit(base);
            visit(index);
        }
        Expr::Array(items) | Expr::Call { args: items, .. } | Expr::UdfCall { args: items, .. } => {
            items.iter().for_each(visit);
        }
        Expr::Object(fields) => fields.iter().for_each(|(_, value)| visit(value)),
        Expr::Unary(_, operand) => visit(operand),
        Expr::Binary(_, left, right) => {
            visit(left);
            visit(right);
        }
        Expr::Conditional(a, b, c)
        | Expr::Between {
            expr: a,
            low: b,
            high: c,
            ..
        } => {
            visit(a);
            visit(b);
            visit(c);
        }
        Expr::In { expr, list, .. } => {
            visit(expr);
            list.iter().for_each(visit);
        }
        Expr::Like {
            expr,
            pattern,
            escape,
            ..
        } => {
            visit(expr);
            visit(pattern);
            if let Some(escape) = escape {
                visit(escape);
            }
        }
        Expr::Exists(query) | Expr::ArrayQuery(query) | Expr::Subquery(query) => {
            for_each_query_expr(query, visit);
        }
    }
}

/// Calls `visit` on every top-level expression of a query (select list, sources, filter...).
pub fn for_each_query_expr<'a>(query: &'a Query, visit: &mut dyn FnMut(&'a Expr)) {
    if let Some(top) = &query.select.top {
        visit(top);
    }
    match &query.select.projection {
        Projection::Star => {}
        Projection::Value(expr) => visit(expr),
        Projection::Items(items) => items.iter().for_each(|item| visit(&item.expr)),
    }
    if let Some(from) = &query.from {
        for source in std::iter::once(&from.source).chain(&from.joins) {
            match source {
                Source::Iterate { collection, .. } | Source::Bind { collection, .. } => {
                    visit(collection);
                }
            }
        }
    }
    if let Some(filter) = &query.filter {
        visit(filter);
    }
    query.group_by.iter().for_each(&mut *visit);
    query.order_by.iter().for_each(|key| visit(&key.expr));
    if let Some(offset_limit) = &query.offset_limit {
        visit(&offset_limit.offset);
        visit(&offset_limit.limit);
    }
}
