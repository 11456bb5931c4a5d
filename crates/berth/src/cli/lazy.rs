//! `Lazy<T>`: a subcommand's clap definition built only when the command
//! line names it.
//!
//! clap builds the whole command tree before parsing: every option of
//! every subcommand, allocated and copied. For berth's ~90 subcommands that
//! was about 200 first-touch page faults of each `berth` process (≈ 1 ms on
//! a virtual machine where a fault costs 5–10 µs), mostly for `run` and
//! `create`'s hundred options, twice each. Wrapped in `Lazy`, a subcommand
//! group or option set is added through `Command::defer`, which clap runs
//! when it parses into that subcommand (or renders its help) and never
//! otherwise.

use clap::{ArgMatches, Args, Command, Error, FromArgMatches, Subcommand};

#[derive(Debug)]
pub struct Lazy<T>(pub T);

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, Error> {
        T::from_arg_matches(matches).map(Lazy)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, Error> {
        T::from_arg_matches_mut(matches).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), Error> {
        self.0.update_from_arg_matches(matches)
    }
}

impl<T: Args> Args for Lazy<T> {
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }

    fn augment_args(command: Command) -> Command {
        command.defer(keeping_about::<T, false>)
    }

    fn augment_args_for_update(command: Command) -> Command {
        command.defer(keeping_about::<T, true>)
    }
}

impl<T: Subcommand> Subcommand for Lazy<T> {
    fn augment_subcommands(command: Command) -> Command {
        command.defer(keeping_about_of_group::<T, false>)
    }

    fn augment_subcommands_for_update(command: Command) -> Command {
        command.defer(keeping_about_of_group::<T, true>)
    }

    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}

/// The subcommand's description is the enum variant's doc comment, which
/// clap's derive sets after `augment_args`; deferred, the options type's
/// own doc comment would replace it.
fn keeping_about<T: Args, const UPDATE: bool>(command: Command) -> Command {
    keep_descriptions(command, |command| {
        if UPDATE {
            T::augment_args_for_update(command)
        } else {
            T::augment_args(command)
        }
    })
}

fn keeping_about_of_group<T: Subcommand, const UPDATE: bool>(command: Command) -> Command {
    keep_descriptions(command, |command| {
        if UPDATE {
            T::augment_subcommands_for_update(command)
        } else {
            T::augment_subcommands(command)
        }
    })
}

fn keep_descriptions(command: Command, augment: impl FnOnce(Command) -> Command) -> Command {
    let about = command.get_about().cloned();
    let long_about = command.get_long_about().cloned();
    let command = augment(command);
    // A variant without a description keeps the options type's.
    let Some(about) = about else {
        return command;
    };
    let command = command.about(about);
    match long_about {
        Some(long_about) => command.long_about(long_about),
        None => command.long_about(None::<&str>),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Deferred or not, every subcommand's help is what the derive says:
    /// the variant's description and all its options.
    #[test]
    fn deferred_subcommands_keep_their_descriptions_and_options() {
        let mut command = crate::cli::Cli::command();
        command.build();
        let run = command.find_subcommand_mut("run").unwrap();
        let help = run.render_help().to_string();
        assert!(
            help.starts_with("Create and run a new container from an image"),
            "{help}"
        );
        assert!(help.contains("--publish"), "{help}");
        let network = command.find_subcommand_mut("network").unwrap();
        let help = network.render_help().to_string();
        assert!(help.starts_with("Manage networks"), "{help}");
        assert!(help.contains("create"), "{help}");
    }
}
