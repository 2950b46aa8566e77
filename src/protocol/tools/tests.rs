//! The table's own checks: the sets per mode × type, names, schemas, where target tools run.

use super::*;

fn names(mode: Mode, kind: SessionType, creds: bool) -> Vec<&'static str> {
    Tool::offered(mode, kind, creds).into_iter().map(Tool::name).collect()
}

/// The six mode × type sets, by size and by the tools each must hold.
#[test]
fn the_sets_match_the_design() {
    use Mode::*;
    assert_eq!(names(Explore, App, false).len(), 17);
    assert_eq!(names(Explore, Browser, false).len(), 19);
    assert_eq!(names(Explore, Browser, true).len(), 20);
    assert_eq!(names(Task, App, false).len(), 21);
    assert_eq!(names(Task, Browser, false).len(), 33);
    assert_eq!(names(Task, Browser, true).len(), 34);
    assert_eq!(
        names(Explore, Shell, false),
        [
            "run_command",
            "read_file",
            "list_dir",
            "search_history",
            "save_note",
            "finish_exploration",
            "request_takeover"
        ]
    );
    assert_eq!(names(Task, Shell, false).len(), 12);
    assert!(names(Task, Shell, false).contains(&"write_file"));
    assert!(!names(Explore, Shell, false).contains(&"write_file"));
    for kind in [Browser, App, Shell] {
        let explore = names(Explore, kind, true);
        let task = names(Task, kind, true);
        assert!(explore.contains(&"finish_exploration") && !explore.contains(&"finish_task"));
        assert!(!explore.contains(&"request_confirmation") && !explore.contains(&"save_file"));
        for t in ["request_confirmation", "ask_user", "save_file", "send_notification", "finish_task", "save_note"] {
            assert!(task.contains(&t), "{t} in task·{kind:?}");
        }
    }
    let task_browser = names(Task, Browser, true);
    assert_eq!(&task_browser[..16], &names(Explore, Browser, false)[..16], "task·browser starts with the core");
}

#[test]
fn names_are_unique_and_round_trip() {
    for (i, t) in Tool::ALL.iter().enumerate() {
        assert_eq!(Tool::from_name(t.name()), Some(*t));
        assert!(Tool::ALL[..i].iter().all(|o| o.name() != t.name()), "{} twice", t.name());
    }
    assert_eq!(Tool::from_name("browser_teleport"), None);
}

#[test]
fn every_schema_is_an_object_with_its_required_properties() {
    for t in Tool::ALL {
        let text = t.spec().input_schema.properties;
        let properties: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: {e}", t.name()));
        for required in t.spec().input_schema.required {
            assert!(properties.get(required).is_some(), "{} requires {required}, which it lacks", t.name());
        }
        assert_eq!(t.spec().input_schema.to_value()["type"], "object");
    }
}

/// Target tools run on the backend of the one session type whose sets hold them.
#[test]
fn target_tools_run_where_their_sets_are() {
    for t in Tool::ALL {
        let spec = t.spec();
        if let Runs::Target(kind) = spec.runs {
            for mode in [Mode::Explore, Mode::Task] {
                for other in [Browser, App, Shell] {
                    if spec.sets.contains(mode, other) {
                        assert_eq!(other, kind, "{} offered to {other:?}", t.name());
                    }
                }
            }
        }
    }
}
