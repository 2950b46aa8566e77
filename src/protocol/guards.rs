//! The guard table: every place the agent steps between the model and its tools, one row each.
//!
//! A guard is anything that does more than run the call the model made and report its result:
//! a note added to a result (hint), a call repaired or aimed elsewhere (repair, redirect), a
//! call not run (hold), a call the controller makes in the model's place (act). Each row says
//! where it acts, its kind, the profiles it is on in by default, and why it exists. The agent
//! asks the table before a guard acts and reports each firing by the row's name (one log event,
//! a count in the session record and in `/metrics`); `agent.guards.NAME: false` in the config
//! and `options.guards` on a session switch a row off by name.
//!
//! Not guards: opening the target first, a result's facts (ARCHITECTURE says why).
//!
//! Invariant: a guard acts only where its row is on; the `full` profile has no row that
//! redirects, repairs or acts, and none that reads the task's words to choose a tool or a file
//! — it keeps what serves every model (loop detection and its escalation, the wrap-up), which
//! are rows of both profiles.

use serde::{Deserialize, Serialize};

/// Which set of guards and tools a session's model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A capable model: the whole tool catalog, only the guards every model needs.
    Full,
    /// A small local model: the short catalog and the guards that measured as helping it.
    Small,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Small => "small",
        }
    }
}

/// A profile as configured or asked for: one of them, or chosen from the endpoint (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileSetting {
    #[default]
    Auto,
    Full,
    Small,
}

impl ProfileSetting {
    pub fn parse(text: &str) -> Option<ProfileSetting> {
        match text.trim() {
            "" | "auto" => Some(ProfileSetting::Auto),
            "full" => Some(ProfileSetting::Full),
            "small" => Some(ProfileSetting::Small),
            _ => None,
        }
    }

    pub fn fixed(self) -> Option<Profile> {
        match self {
            ProfileSetting::Auto => None,
            ProfileSetting::Full => Some(Profile::Full),
            ProfileSetting::Small => Some(Profile::Small),
        }
    }
}

/// The profile a session runs with, and why (shown in the record and by `config check`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileChoice {
    pub name: Profile,
    pub why: String,
}

/// Where a guard acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before a model call: what the turn offers and says.
    BeforeTurn,
    /// Before a tool call runs.
    BeforeCall,
    /// After a tool call's result came back.
    AfterResult,
    /// When the session ends.
    AtEnd,
    /// In the worker, asked for by the controller in the command's parameters.
    Worker,
}

impl Stage {
    /// As README's guard table says it.
    pub fn words(self) -> &'static str {
        match self {
            Stage::BeforeTurn => "before a turn",
            Stage::BeforeCall => "before a call",
            Stage::AfterResult => "after a result",
            Stage::AtEnd => "at the end",
            Stage::Worker => "in the worker",
        }
    }
}

/// What a guard does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Adds words to a result or a turn.
    Hint,
    /// Fixes a call's arguments or reads it as the tool it names.
    Repair,
    /// Runs another call than the one made (another element, another tool).
    Redirect,
    /// Does not run the call, once or for good.
    Hold,
    /// Makes a call the model did not make.
    Act,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Hint => "hint",
            Kind::Repair => "repair",
            Kind::Redirect => "redirect",
            Kind::Hold => "hold",
            Kind::Act => "act",
        }
    }
}

const BOTH: &[Profile] = &[Profile::Full, Profile::Small];
const SMALL: &[Profile] = &[Profile::Small];

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub stage: Stage,
    pub kind: Kind,
    pub profiles: &'static [Profile],
    pub why: &'static str,
}

macro_rules! guards {
    ($($variant:ident = $name:literal),* $(,)?) => {
        /// Every guard, in the table's order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Guard { $($variant),* }

        impl Guard {
            pub const ALL: &'static [Guard] = &[$(Guard::$variant),*];

            /// The name in logs, metrics, the config and `options.guards`.
            pub fn name(self) -> &'static str {
                match self { $(Guard::$variant => $name),* }
            }
        }
    };
}

guards! {
    ShortCatalog = "short_catalog",
    Recital = "recital",
    StuckDeliver = "stuck_deliver",
    PrematureFinish = "premature_finish",
    LoginHint = "login_hint",
    ReadingHints = "reading_hints",
    SameNameRead = "same_name_read",
    AnswerInWords = "answer_in_words",
    InvalidFormHold = "invalid_form_hold",
    FormDefaults = "form_defaults",
    FormValues = "form_values",
    ClickAsSaid = "click_as_said",
    FileLinkDownload = "file_link_download",
    TextCall = "text_call",
    LooseActions = "loose_actions",
    JsonCorrection = "json_correction",
    ArgumentRepair = "argument_repair",
    LooseSelectors = "loose_selectors",
    ReadonlyClick = "readonly_click",
    SelectSetsValue = "select_sets_value",
    RadioByLabel = "radio_by_label",
    ReadMissPage = "read_miss_page",
    ToolAdvice = "tool_advice",
    Progress = "progress",
    LoopNote = "loop_note",
    LoopHold = "loop_hold",
    StreakHold = "streak_hold",
    FailedHold = "failed_hold",
    DoneBefore = "done_before",
}

impl Guard {
    pub fn from_name(name: &str) -> Option<Guard> {
        Guard::ALL.iter().copied().find(|g| g.name() == name)
    }

    /// Whether the guard is on in `profile` unless switched.
    pub fn in_profile(self, profile: Profile) -> bool {
        self.row().profiles.contains(&profile)
    }

    /// The table's row.
    pub fn row(self) -> Row {
        use Guard::*;
        use Kind::*;
        use Stage::*;
        let row = |stage, kind, profiles, why| Row { stage, kind, profiles, why };
        match self {
            ShortCatalog => row(
                BeforeTurn,
                Hint,
                SMALL,
                "a short tool list (the rest run when called by name): a small model picks from fewer tools and a short first request",
            ),
            Recital => row(
                BeforeTurn,
                Hint,
                SMALL,
                "the task, the files saved and the turn closing each request once a file is saved or the task is a few pages back (in JSON mode, every request): small models lose the task in long contexts",
            ),
            StuckDeliver => row(
                BeforeTurn,
                Hold,
                BOTH,
                "loop escalation: a stuck session gets one call offering only its tools that deliver, the finish among them, before it ends",
            ),
            PrematureFinish => row(
                BeforeCall,
                Hold,
                SMALL,
                "a finish before the file the task's words name is saved: not run once, the call that saves it named (the tool read from those words too)",
            ),
            LoginHint => row(
                AfterResult,
                Hint,
                SMALL,
                "a sign-in form in a session with credentials names perform_login (small models submit it empty)",
            ),
            ReadingHints => row(
                AfterResult,
                Hint,
                SMALL,
                "a CSV file read gets its columns and the awk that sums one, a long text its line count and the grep that counts; awk over a CSV by blanks, one path printed, a program not found are said so (small models count by eye)",
            ),
            SameNameRead => row(
                Worker,
                Redirect,
                SMALL,
                "a read of a path that does not exist reads the only file of that name below the nearest folder that does, said in a note; several are named, none said (small models guess a file's folder); on the worker and over SSH alike",
            ),
            AnswerInWords => row(
                AtEnd,
                Act,
                SMALL,
                "a task ending without the text file its words name: its content asked for in words and saved when grounded",
            ),
            InvalidFormHold => row(
                Worker,
                Hold,
                BOTH,
                "a click on a submit whose form the browser would not send (a required field empty, an e-mail that is not one) is not made; the refusal names each field with the browser's own message, which no snapshot shows",
            ),
            FormDefaults => row(
                Worker,
                Hold,
                SMALL,
                "the first submit of a form (or of a button among fields, with no form) whose selects or prefilled fields nobody set is refused once a session, naming them; with no form, a `type=button` button too, among text fields all empty",
            ),
            FormValues => row(
                AfterResult,
                Act,
                SMALL,
                "a refused submit gets the fill the task's words give; insisted on twice, the controller fills and sends",
            ),
            ClickAsSaid => row(
                BeforeCall,
                Redirect,
                SMALL,
                "a click on a ref the reply's words do not name, while they quote one other link or button (not a text just typed), clicks that one",
            ),
            FileLinkDownload => row(
                BeforeCall,
                Redirect,
                SMALL,
                "a click on a link to a file downloads it (a viewer has no page to act on)",
            ),
            TextCall => row(
                BeforeCall,
                Repair,
                SMALL,
                "a reply with no tool call whose text is one call to an offered tool (a fenced JSON block, `<tool_call>` tags) runs as that call (templates that are not tool-aware return calls as text); native tool calls, every wire format",
            ),
            LooseActions => row(
                BeforeCall,
                Repair,
                SMALL,
                "a JSON action in another shape than asked (the tool under another key, its arguments under another name, a nested step, no action key, a key written twice, the tool named inside its arguments, text around it) is read as meant; JSON action mode",
            ),
            JsonCorrection => row(
                BeforeCall,
                Hint,
                BOTH,
                "a JSON action that cannot be read (no JSON, an unknown tool, arguments not an object) is answered once with the exact error before it counts as the model's words, as a native API refuses a malformed call; JSON action mode",
            ),
            ArgumentRepair => row(
                BeforeCall,
                Repair,
                SMALL,
                "arguments under the wrong name, a list of one, or unknown keys are fixed with a note instead of refused",
            ),
            LooseSelectors => row(
                Worker,
                Repair,
                SMALL,
                "a selector in another spelling of what is meant (`[ref=e4]`, `e4`, a field's name as `ref=email`, `button=Send`, `:contains(…)`, a label's `text=` for its field), or an option named by part of its text, is read as meant",
            ),
            ReadonlyClick => row(
                Worker,
                Redirect,
                SMALL,
                "typing into a read-only field (a date picker's box) clicks it instead, as a person opens its calendar, and the answer shows what opened",
            ),
            SelectSetsValue => row(
                Worker,
                Redirect,
                SMALL,
                "select_option on a field that is no select (a date, number or range field, an ARIA slider) sets its value as typing would",
            ),
            RadioByLabel => row(
                Worker,
                Repair,
                SMALL,
                "a radio given in a fill with another radio's label (the group's field for the choice) checks the radio of that label",
            ),
            ReadMissPage => row(
                Worker,
                Redirect,
                SMALL,
                "a read of part of the page (text, DOM, links, a table) whose selector matches nothing answers with the whole page as a result, not an error",
            ),
            ToolAdvice => row(
                Worker,
                Hint,
                SMALL,
                "a click on a text field says to type into it (a read-only one: to choose from what opened), a table read without a file name how to keep it as one",
            ),
            Progress => row(
                BeforeTurn,
                Hint,
                SMALL,
                "once a session acted twice, each request closes with its steps so far: what each acted on and what it did (a new page, lines changed, nothing); JSON action mode",
            ),
            LoopNote => row(
                AfterResult,
                Hint,
                BOTH,
                "loop detection: a repeated call or cycle with the same results is said so, then shown the page",
            ),
            LoopHold => row(
                BeforeCall,
                Hold,
                BOTH,
                "loop escalation: a call that would repeat a loop a third time is not run; held again soon, the session is stuck",
            ),
            StreakHold => row(
                BeforeCall,
                Hold,
                BOTH,
                "loop escalation: one tool called past eight times in a row (not run_command) is held",
            ),
            FailedHold => row(
                BeforeCall,
                Hold,
                BOTH,
                "loop escalation: a call that failed the same way twice is not run again until a new page comes",
            ),
            DoneBefore => row(
                BeforeCall,
                Hold,
                BOTH,
                "a URL downloaded before, or a page printed before as it is now, is answered with its file",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_full_only_has_what_serves_every_model() {
        let mut names: Vec<&str> = Guard::ALL.iter().map(|g| g.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Guard::ALL.len());
        for g in Guard::ALL {
            assert_eq!(Guard::from_name(g.name()), Some(*g));
            let row = g.row();
            if g.in_profile(Profile::Full) {
                assert!(
                    matches!(row.kind, Kind::Hint | Kind::Hold),
                    "{}: full never redirects, repairs or acts",
                    g.name()
                );
                let every_model = [Guard::DoneBefore, Guard::JsonCorrection, Guard::InvalidFormHold];
                assert!(row.why.contains("loop") || every_model.contains(g), "{}: full keeps loop handling", g.name());
            }
            assert!(g.in_profile(Profile::Small), "{}: small has every guard", g.name());
        }
    }
}
