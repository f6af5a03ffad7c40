//! What a tool result, a prompt message or a resource read carries besides JSON: text,
//! images, audio, embedded resources and links to resources, as MCP content blocks.
//!
//! A handler that answers with pictures or files returns [`Content`] instead of a
//! structured type; a prompt's messages and a resource's body are made of the same
//! [`Block`]s.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{ContentBlock, ResourceContents};

/// One content block: text, an image, audio, an embedded resource, or a link to one.
///
/// ```
/// use toolgate_runtime::content::Block;
/// let png: &[u8] = &[0x89, b'P', b'N', b'G'];
/// let blocks = [
///     Block::text("The chart of March:"),
///     Block::image(png, "image/png"),
///     Block::embedded_text("invoice://INV-7/notes", "text/plain", "Paid late twice."),
/// ];
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Block(pub(crate) ContentBlock);

impl Block {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Self(ContentBlock::text(text))
    }

    /// An image: its bytes (sent base64-encoded) and media type (`image/png`).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self(ContentBlock::image(STANDARD.encode(bytes), mime_type))
    }

    /// Audio: its bytes (sent base64-encoded) and media type (`audio/wav`).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self(ContentBlock::audio(STANDARD.encode(bytes), mime_type))
    }

    /// A resource embedded whole, as text.
    pub fn embedded_text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        let contents = ResourceContents::TextResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: text.into(),
            meta: None,
        };
        Self(ContentBlock::resource(contents))
    }

    /// A resource embedded whole, as bytes (sent base64-encoded).
    pub fn embedded_blob(uri: impl Into<String>, mime_type: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self {
        let contents = ResourceContents::BlobResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            blob: STANDARD.encode(bytes),
            meta: None,
        };
        Self(ContentBlock::resource(contents))
    }

    /// A link to a resource the client may read (`resources/read`), with its name.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self(ContentBlock::resource_link(rmcp::model::Resource::new(uri, name)))
    }
}

/// A tool result made of content blocks rather than a structured type: what a handler
/// returns to answer with an image, audio or an embedded file.
///
/// The blocks are the result's `content`; toolgate's own fields (`domain`, `state`, the
/// flow handle) still travel in `structuredContent` when the tool has any.
///
/// ```
/// use toolgate_runtime::ToolError;
/// use toolgate_runtime::content::{Block, Content};
/// # fn render() -> Vec<u8> { Vec::new() }
/// async fn chart() -> Result<Content, ToolError> {
///     Ok(Content::new().with(Block::text("March, by week:")).with(Block::image(render(), "image/png")))
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Content(pub(crate) Vec<Block>);

impl Content {
    /// No blocks yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `block` after the others.
    #[must_use]
    pub fn with(mut self, block: Block) -> Self {
        self.0.push(block);
        self
    }

    /// Adds `block` after the others.
    pub fn push(&mut self, block: Block) {
        self.0.push(block);
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.0
    }

    pub(crate) fn into_blocks(self) -> Vec<ContentBlock> {
        self.0.into_iter().map(|block| block.0).collect()
    }
}

impl From<Block> for Content {
    fn from(block: Block) -> Self {
        Self(vec![block])
    }
}

impl From<Vec<Block>> for Content {
    fn from(blocks: Vec<Block>) -> Self {
        Self(blocks)
    }
}

impl FromIterator<Block> for Content {
    fn from_iter<I: IntoIterator<Item = Block>>(blocks: I) -> Self {
        Self(blocks.into_iter().collect())
    }
}
