//! The kinds of child resource the generic catalog holds, and what tells them apart: the
//! parent each hangs under, its key marker, its rid shape, its feed name and path segment,
//! whether a replace may rename it, and the links it carries.
//!
//! Adding a kind means adding a variant and its lines in each descriptor here; the operations
//! in `resource.rs` need no change. Nothing here reads or writes storage.

use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::rids;

/// The kinds of child resource the generic catalog holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceKind {
    User,
    Permission,
    StoredProcedure,
    Trigger,
    UserDefinedFunction,
    Conflict,
    /// A database's client encryption key: the wrapped data encryption key and the metadata
    /// its client needs to unwrap it. The encryption itself is the SDKs'; the service only keeps
    /// the key's metadata.
    ClientEncryptionKey,
}

/// What a child resource hangs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParentLevel {
    Database,
    Container,
    User,
}

impl ResourceKind {
    pub const ALL: [ResourceKind; 7] = [
        ResourceKind::User,
        ResourceKind::Permission,
        ResourceKind::StoredProcedure,
        ResourceKind::Trigger,
        ResourceKind::UserDefinedFunction,
        ResourceKind::Conflict,
        ResourceKind::ClientEncryptionKey,
    ];

    /// The name of the list in a read feed's body (`{"Users": [...], "_count": n}`).
    pub fn feed_name(self) -> &'static str {
        match self {
            ResourceKind::User => "Users",
            ResourceKind::Permission => "Permissions",
            ResourceKind::StoredProcedure => "StoredProcedures",
            ResourceKind::Trigger => "Triggers",
            ResourceKind::UserDefinedFunction => "UserDefinedFunctions",
            ResourceKind::Conflict => "Conflicts",
            ResourceKind::ClientEncryptionKey => "ClientEncryptionKeys",
        }
    }

    /// The path segment of the kind in URLs and `_self` links (`dbs/{db}/colls/{c}/sprocs/...`).
    pub fn path_segment(self) -> &'static str {
        match self {
            ResourceKind::User => "users",
            ResourceKind::Permission => "permissions",
            ResourceKind::StoredProcedure => "sprocs",
            ResourceKind::Trigger => "triggers",
            ResourceKind::UserDefinedFunction => "udfs",
            ResourceKind::Conflict => "conflicts",
            ResourceKind::ClientEncryptionKey => "clientencryptionkeys",
        }
    }

    /// The kind a path segment names (`sprocs` is a stored procedure): the inverse of
    /// [`ResourceKind::path_segment`], so the two cannot disagree.
    pub fn from_path_segment(segment: &str) -> Option<ResourceKind> {
        ResourceKind::ALL
            .into_iter()
            .find(|kind| kind.path_segment() == segment)
    }

    /// The resource types along a path before the kind's own segment: `dbs` for a user,
    /// `dbs/users` for a permission, `dbs/colls` for a container's children.
    pub fn parent_path_types(self) -> &'static [&'static str] {
        match self.parent_level() {
            ParentLevel::Database => &["dbs"],
            ParentLevel::Container => &["dbs", "colls"],
            ParentLevel::User => &["dbs", "users"],
        }
    }

    /// Whether a replace may give the resource a new id (the service allows it for users and
    /// permissions); for the other kinds the body's id must be the addressed one.
    pub fn renames_allowed(self) -> bool {
        matches!(self, ResourceKind::User | ResourceKind::Permission)
    }

    /// Whether the kind is server-side JavaScript (a stored procedure, trigger or user-defined
    /// function), whose body is checked when it is stored.
    pub fn is_script(self) -> bool {
        matches!(
            self,
            ResourceKind::StoredProcedure
                | ResourceKind::Trigger
                | ResourceKind::UserDefinedFunction
        )
    }

    pub(crate) fn parent_level(self) -> ParentLevel {
        match self {
            ResourceKind::User | ResourceKind::ClientEncryptionKey => ParentLevel::Database,
            ResourceKind::Permission => ParentLevel::User,
            ResourceKind::StoredProcedure
            | ResourceKind::Trigger
            | ResourceKind::UserDefinedFunction
            | ResourceKind::Conflict => ParentLevel::Container,
        }
    }

    /// The byte after `r` in the kind's catalog keys.
    pub(crate) fn key_marker(self) -> u8 {
        match self {
            ResourceKind::User => b'u',
            ResourceKind::Permission => b'p',
            ResourceKind::StoredProcedure => b's',
            ResourceKind::Trigger => b't',
            ResourceKind::UserDefinedFunction => b'f',
            ResourceKind::Conflict => b'x',
            ResourceKind::ClientEncryptionKey => b'k',
        }
    }

    /// The marker in the top byte of a grandchild's (or a client encryption key's) rid number,
    /// so siblings of different kinds (and items) never share a rid. Users have none: their rid
    /// has its own shape.
    pub(crate) fn rid_marker(self) -> u8 {
        match self {
            ResourceKind::User => 0,
            ResourceKind::Permission => 0x02,
            ResourceKind::Conflict => 0x04,
            ResourceKind::UserDefinedFunction => 0x06,
            ResourceKind::Trigger => 0x07,
            ResourceKind::StoredProcedure => 0x08,
            ResourceKind::ClientEncryptionKey => 0x0A,
        }
    }

    /// The length of the kind's rids in bytes.
    pub(crate) fn rid_bytes(self) -> usize {
        match self {
            ResourceKind::User => rids::CONTAINER_RID_BYTES,
            ResourceKind::ClientEncryptionKey => rids::DATABASE_CHILD_RID_BYTES,
            _ => rids::DOCUMENT_RID_BYTES,
        }
    }

    /// Links to the resource's own children, as the service includes them.
    pub(crate) fn links(self) -> &'static [(&'static str, &'static str)] {
        match self {
            ResourceKind::User => &[("_permissions", "permissions/")],
            _ => &[],
        }
    }

    /// The kinds that hang directly under a resource of this kind.
    pub(crate) fn child_kinds(self) -> impl Iterator<Item = ResourceKind> {
        ResourceKind::ALL.into_iter().filter(move |kind| {
            self == ResourceKind::User && kind.parent_level() == ParentLevel::User
        })
    }
}

/// The resource a child hangs under, by ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceParent {
    Database {
        database_id: String,
    },
    Container {
        database_id: String,
        container_id: String,
    },
    User {
        database_id: String,
        user_id: String,
    },
}

impl ResourceParent {
    pub(crate) fn level(&self) -> ParentLevel {
        match self {
            ResourceParent::Database { .. } => ParentLevel::Database,
            ResourceParent::Container { .. } => ParentLevel::Container,
            ResourceParent::User { .. } => ParentLevel::User,
        }
    }

    /// The parent's ids from the database down, the middle of its children's keys.
    pub(crate) fn ids(&self) -> Vec<&str> {
        match self {
            ResourceParent::Database { database_id } => vec![database_id],
            ResourceParent::Container {
                database_id,
                container_id,
            } => vec![database_id, container_id],
            ResourceParent::User {
                database_id,
                user_id,
            } => vec![database_id, user_id],
        }
    }

    /// Checks the parent is of the level the kind hangs under.
    pub(crate) fn check(&self, kind: ResourceKind) -> EngineResult<()> {
        if self.level() == kind.parent_level() {
            Ok(())
        } else {
            Err(EngineError::with_message(
                ErrorCode::InvalidResourcePath,
                format!(
                    "{} cannot be addressed under this resource.",
                    kind.feed_name()
                ),
            ))
        }
    }
}
