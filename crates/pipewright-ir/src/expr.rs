//! Expressions and templates in the IR, whichever language they are written in. A node says
//! which language its text is in and carries the parsed form where the language has one; the
//! interpreter asks the evaluator of that language. Recipe conditions and templates have no
//! parsed form worth keeping: the runner substitutes `{{…}}` into the text first and parses
//! what results, so their text is what is evaluated.

use pipewright_syntax::Span;
use pipewright_yaml::ScalarStyle;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// An R1 expression (pipelines).
    R1,
    /// An R1 prompt template with `{…}` holes (pipeline agent prompts).
    R1Template,
    /// A recipe condition (`condition`, `while_condition`, `break_when`).
    RecipeCondition,
    /// A recipe `{{var}}` template (prompts, commands, paths, values).
    RecipeTemplate,
    /// A MEOW `{{var}}` template.
    MeowTemplate,
    /// Text used as written, with no substitution (a state-machine recipe's prompt).
    Text,
}

impl Lang {
    pub fn name(self) -> &'static str {
        match self {
            Lang::R1 => "r1",
            Lang::R1Template => "r1-template",
            Lang::RecipeCondition => "recipe-condition",
            Lang::RecipeTemplate => "recipe-template",
            Lang::MeowTemplate => "meow-template",
            Lang::Text => "text",
        }
    }
}

/// The parsed form of an expression's text, in its language.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    R1(pipewright_r1::Expr),
    R1Template(pipewright_r1::template::Template),
    /// The language is evaluated from its text.
    Text,
    /// Not kept: the program was lowered to be drawn (`graph`), which shows the text only, and
    /// a large file's trees are a third of its lowered program.
    NotKept,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub lang: Lang,
    /// The text as written (a YAML scalar's value).
    pub src: String,
    /// The scalar in the file; byte ranges inside `src` map back through [`Expr::span_of`].
    pub span: Span,
    pub style: ScalarStyle,
    pub parsed: Parsed,
}

impl Expr {
    pub fn r1(src: String, span: Span, style: ScalarStyle, ast: pipewright_r1::Expr) -> Expr {
        Expr {
            lang: Lang::R1,
            src,
            span,
            style,
            parsed: Parsed::R1(ast),
        }
    }

    pub fn r1_template(
        src: String,
        span: Span,
        style: ScalarStyle,
        template: pipewright_r1::template::Template,
    ) -> Expr {
        Expr {
            lang: Lang::R1Template,
            src,
            span,
            style,
            parsed: Parsed::R1Template(template),
        }
    }

    /// An expression of a language evaluated from its text.
    pub fn text(lang: Lang, src: String, span: Span, style: ScalarStyle) -> Expr {
        Expr {
            lang,
            src,
            span,
            style,
            parsed: Parsed::Text,
        }
    }

    /// The expression without its parsed form (see [`Parsed::NotKept`]).
    pub fn without_parsed(self) -> Expr {
        Expr {
            parsed: match self.parsed {
                Parsed::Text => Parsed::Text,
                _ => Parsed::NotKept,
            },
            ..self
        }
    }

    /// The R1 tree, for an [`Lang::R1`] expression.
    pub fn as_r1(&self) -> Option<&pipewright_r1::Expr> {
        match &self.parsed {
            Parsed::R1(e) => Some(e),
            _ => None,
        }
    }

    /// The parsed template, for an [`Lang::R1Template`] prompt.
    pub fn as_r1_template(&self) -> Option<&pipewright_r1::template::Template> {
        match &self.parsed {
            Parsed::R1Template(t) => Some(t),
            _ => None,
        }
    }

    /// The file span of a byte range inside the expression text.
    pub fn span_of(&self, source: &str, rel: std::ops::Range<usize>) -> Span {
        pipewright_yaml::map_scalar_range(source, self.span, self.style, &self.src, rel)
    }
}
