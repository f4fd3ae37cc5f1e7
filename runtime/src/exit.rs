//! The exit statuses of both binaries, in one place.
//!
//! Input: nothing. Output: [`Exit`] and the text `--help` shows for it. No IO.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success (warnings may have been printed on stderr) |
//! | 1 | the input is invalid or cannot be satisfied: a catalog that does not load or validate, a resolution that fails, a certificate file that does not parse |
//! | 2 | usage error: unknown flag, missing argument, a path given on the command line that cannot be read |
//! | 3 | runtime failure: the input was fine but running failed (a port already in use, the API server unreachable at start-up, a crashed task) |
//!
//! clap exits with 2 on its own for usage errors it detects, and with 0 after `--help`/`--version`.

use std::process::ExitCode;

/// How a binary ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok,
    /// 1: the input is invalid or cannot be satisfied.
    Invalid,
    /// 2: usage error.
    Usage,
    /// 3: running failed although the input was valid.
    Failed,
}

impl Exit {
    /// The numeric status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Invalid => 1,
            Exit::Usage => 2,
            Exit::Failed => 3,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// The exit-status table for `--help` (clap's `after_help`) of both binaries.
pub const EXIT_STATUS_HELP: &str = "\
Exit status:
  0  success (warnings may have been printed on stderr)
  1  invalid input: a catalog that does not load or validate, a failed resolution, a bad certificate
  2  usage error: unknown flag, missing argument, a path on the command line that cannot be read
  3  runtime failure: valid input, but running failed (port in use, API server unreachable, ...)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_is_distinct_and_listed_in_the_help_text() {
        let all = [Exit::Ok, Exit::Invalid, Exit::Usage, Exit::Failed];
        for (i, exit) in all.iter().enumerate() {
            assert_eq!(usize::from(exit.code()), i);
            assert!(
                EXIT_STATUS_HELP.contains(&format!("\n  {}  ", exit.code())),
                "{exit:?}"
            );
        }
    }
}
