//! The second pass: the arena to a value tree, copying back-referenced values within the limits.

use super::super::value::{ObjectKind, PhpKey, PhpObject, PhpValue};
use super::super::CodecError;
use super::parser::Node;

/// Turns the arena into a tree, copying back-referenced values.
pub(super) struct Builder {
    pub(super) nodes: Vec<Node>,
    /// Whether values may be shared (then leaves are cloned, not moved).
    pub(super) copy: bool,
    pub(super) elements_left: usize,
    pub(super) bytes_left: usize,
    pub(super) max_depth: usize,
}

impl Builder {
    fn charge(&mut self, bytes: usize, at: Option<usize>) -> Result<(), CodecError> {
        let over = |what: &str| CodecError {
            message: format!(
                "copying back-referenced values exceeds the {what} limit (a reference bomb?)"
            ),
            offset: at,
        };
        self.elements_left = self
            .elements_left
            .checked_sub(1)
            .ok_or_else(|| over("max_elements"))?;
        self.bytes_left = self
            .bytes_left
            .checked_sub(bytes)
            .ok_or_else(|| over("max_bytes"))?;
        Ok(())
    }

    pub(super) fn build(&mut self, id: usize, depth: usize) -> Result<PhpValue, CodecError> {
        self.build_at(id, depth, None)
    }

    /// `via` is the offset of the back-reference being expanded, if any.
    fn build_at(
        &mut self,
        id: usize,
        depth: usize,
        via: Option<usize>,
    ) -> Result<PhpValue, CodecError> {
        let node = match self.nodes.get_mut(id) {
            None | Some(Node::Pending) => {
                return Err(CodecError::new("internal error: unresolved value"))
            }
            Some(Node::Ref(target, at)) => {
                let (target, at) = (*target, *at);
                return self.build_at(target, depth, Some(at));
            }
            Some(node) if self.copy => node,
            Some(node) => {
                // No sharing: move the node out instead of cloning it.
                return match std::mem::replace(node, Node::Pending) {
                    Node::Leaf(v) => Ok(v),
                    Node::Array(entries) => {
                        Ok(PhpValue::Array(self.children(entries, depth, via)?))
                    }
                    Node::Object(class, props) => Ok(PhpValue::Object(PhpObject {
                        class,
                        kind: ObjectKind::Object,
                        properties: self.children(props, depth, via)?,
                    })),
                    Node::Pending | Node::Ref(..) => {
                        Err(CodecError::new("internal error: unresolved value"))
                    }
                };
            }
        };
        match node {
            Node::Leaf(v) => {
                let v = v.clone();
                let bytes = match &v {
                    PhpValue::String(s) => s.len(),
                    PhpValue::Object(o) => match &o.kind {
                        ObjectKind::Custom(p) => p.len() + o.class.len(),
                        ObjectKind::Enum(case) => case.len() + o.class.len(),
                        ObjectKind::Object => o.class.len(),
                    },
                    _ => 0,
                };
                self.charge(bytes, via)?;
                Ok(v)
            }
            Node::Array(entries) => {
                let entries = entries.clone();
                self.charge(0, via)?;
                Ok(PhpValue::Array(self.children(entries, depth, via)?))
            }
            Node::Object(class, props) => {
                let (class, props) = (class.clone(), props.clone());
                self.charge(class.len(), via)?;
                Ok(PhpValue::Object(PhpObject {
                    class,
                    kind: ObjectKind::Object,
                    properties: self.children(props, depth, via)?,
                }))
            }
            Node::Pending | Node::Ref(..) => {
                Err(CodecError::new("internal error: unresolved value"))
            }
        }
    }

    fn children(
        &mut self,
        entries: Vec<(PhpKey, usize)>,
        depth: usize,
        via: Option<usize>,
    ) -> Result<Vec<(PhpKey, PhpValue)>, CodecError> {
        if depth >= self.max_depth {
            return Err(CodecError {
                message: format!(
                    "after copying back-referenced values, nesting exceeds {} levels (limit max_depth)",
                    self.max_depth
                ),
                offset: via,
            });
        }
        let mut out = Vec::with_capacity(entries.len());
        for (k, child) in entries {
            if let PhpKey::Str(s) = &k {
                if self.copy {
                    self.bytes_left = self.bytes_left.checked_sub(s.len()).ok_or_else(|| CodecError {
                        message: "copying back-referenced values exceeds the max_bytes limit (a reference bomb?)".to_owned(),
                        offset: via,
                    })?;
                }
            }
            out.push((k, self.build_at(child, depth + 1, via)?));
        }
        Ok(out)
    }
}
