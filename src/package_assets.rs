//! `switchyard package-assets DIR` (not a listed command): what the release packages install beside the CLI,
//! generated from the CLI's own definition so they never drift from it: shell completions
//! (`DIR/completions/`: `switchyard.bash`, `_switchyard` for zsh, `switchyard.fish`) and man pages
//! (`DIR/man/switchyard.1` and one `switchyard-<command>.1` per command). `./dev package` runs it.

use clap::Command;
use clap_complete::Shell;
use std::path::Path;
use std::process::ExitCode;

/// Writes everything into `dir` and prints each file written.
pub fn run(cmd: Command, dir: &Path) -> ExitCode {
    match write(cmd, dir) {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: writing into {}: {e}", dir.display());
            ExitCode::from(2)
        }
    }
}

fn write(mut cmd: Command, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut written = Vec::new();
    let completions = dir.join("completions");
    std::fs::create_dir_all(&completions)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        written.push(clap_complete::generate_to(shell, &mut cmd, "switchyard", &completions)?);
    }
    let man = dir.join("man");
    std::fs::create_dir_all(&man)?;
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    man_pages(&cmd, &man)?;
    let mut pages: Vec<_> = std::fs::read_dir(&man)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    pages.sort();
    written.extend(pages);
    Ok(written)
}

/// One page per command that a user can type (no hidden ones, no `help` subcommands of command
/// groups), named as clap_mangen names them: `switchyard-runs-list.1`.
fn man_pages(cmd: &Command, dir: &Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        man_pages(sub, dir)?;
    }
    clap_mangen::Man::new(cmd.clone()).generate_to(dir)?;
    Ok(())
}
