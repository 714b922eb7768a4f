"""Workspace discovery and store identity, checked against real git and GitPython.

`discover()` re-implements git's repository discovery in Python (docs/design/paths.md), so
every scenario here builds real repositories in tmp_path and compares our answer with two
independent oracles: `git rev-parse` (run with the isolated test environment, so the
developer's configuration never applies) and GitPython's own discovery. Nothing is mocked.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Cli, add_submodule, make_repo
from conftest import git as run_git

from cortex.cases.errors import InvalidInputError
from cortex.workspace.identity import WorkspaceIdentity, discover, git_head, store_id_for

STORE_ID = re.compile(r"[A-Za-z0-9._-]+-[0-9a-f]{12}")


# -- oracles ---------------------------------------------------------------------------------


def git_says(cwd: Path, env: dict[str, str]) -> tuple[str, str]:
    """(common dir, worktree top) according to `git rev-parse`, both as realpaths."""
    out = run_git(
        cwd,
        "rev-parse",
        "--path-format=absolute",
        "--git-common-dir",
        "--show-toplevel",
        env=env,
    )
    common, top = out.split("\n")
    return os.path.realpath(common), os.path.realpath(top)


def git_common_dir(cwd: Path, env: dict[str, str]) -> str:
    """Git's common dir for `cwd` (works where there is no worktree, e.g. a bare repo)."""
    out = run_git(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir", env=env)
    return os.path.realpath(out)


def git_refuses(cwd: Path, env: dict[str, str]) -> bool:
    """Whether `git rev-parse` says `cwd` is in no repository (or an unusable one)."""
    proc = subprocess.run(
        ["git", "rev-parse", "--git-common-dir"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode != 0


def gitpython_common_dir(path: Path) -> str:
    """GitPython's common dir for `path`, searching parents like git does."""
    import git

    with git.Repo(path, search_parent_directories=True) as found:
        return os.path.realpath(found.common_dir)


def hashed(key: str) -> str:
    """The 12 hex digits a store id must end with, computed independently of cortex."""
    return hashlib.sha256(os.fsencode(key)).hexdigest()[:12]


def assert_agrees(
    cwd: Path, env: dict[str, str], *, gitpython_at: Path | None = None, gitpython: bool = True
) -> WorkspaceIdentity:
    """Check `discover(cwd)` against git and GitPython; return it for further checks.

    GitPython walks and joins paths lexically where git resolves symlinks, so a few tests point
    it at the resolved path (`gitpython_at`) or leave it out; git stays the reference.
    """
    found = discover(str(cwd), env)
    common, top = git_says(cwd, env)
    assert found.kind == "git"
    assert found.common_dir == common
    assert found.root == top
    if gitpython:
        assert found.common_dir == gitpython_common_dir(gitpython_at or cwd)
    assert found.note is None
    assert STORE_ID.fullmatch(found.store_id), found.store_id
    assert found.store_id.endswith("-" + hashed(common))
    assert found.store_id == store_id_for(common, found.name)
    return found


def assert_plain_directory(cwd: Path, env: dict[str, str]) -> WorkspaceIdentity:
    """Check that `cwd` is outside git for both oracles and that we key it by its realpath."""
    import git

    assert git_refuses(cwd, env)
    with pytest.raises(git.InvalidGitRepositoryError):
        gitpython_common_dir(cwd)
    real = os.path.realpath(cwd)
    found = discover(str(cwd), env)
    assert found.kind == "directory"
    assert found.root == real
    assert found.common_dir is None
    assert found.note
    assert found.name == os.path.basename(real)
    assert found.store_id == store_id_for(real, os.path.basename(real))
    assert found.store_id.endswith("-" + hashed(real))
    return found


# -- builders --------------------------------------------------------------------------------


def add_worktree(main: Path, path: Path, branch: str, env: dict[str, str]) -> Path:
    """A linked worktree of `main` at `path` on a new branch."""
    run_git(main, "worktree", "add", "-q", "-b", branch, str(path), env=env)
    return path


def clone(origin: Path, path: Path, env: dict[str, str], *extra: str) -> Path:
    """A clone of `origin` at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run_git(path.parent, "clone", "-q", *extra, str(origin), str(path), env=env)
    return path


def subdir(root: Path, *parts: str) -> Path:
    """A (created) directory below `root`."""
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def move_git_dir(work: Path, target: Path, gitfile: str) -> None:
    """Move `work/.git` to `target` and leave a `.git` file with the given content."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(work / ".git"), str(target))
    (work / ".git").write_text(gitfile)


# -- discovery against the oracles -----------------------------------------------------------


class TestMainWorktree:
    """A normal clone's main worktree."""

    def test_root_matches_git(self, repo: Path, env: dict[str, str]) -> None:
        """At the worktree root, common dir, root and store id match git and GitPython."""
        found = assert_agrees(repo, env)
        assert found.root == os.path.realpath(repo)
        assert found.common_dir == os.path.realpath(repo / ".git")
        assert found.name == "repo"

    def test_deep_subdirectory_matches_the_root(self, repo: Path, env: dict[str, str]) -> None:
        """A deep subdirectory belongs to the same worktree and store as the root."""
        deep = subdir(repo, "src", "pkg", "a", "b", "c")
        found = assert_agrees(deep, env)
        assert found.root == os.path.realpath(repo)
        assert found.store_id == discover(str(repo), env).store_id

    def test_inside_the_git_dir_uses_the_same_store(self, repo: Path, env: dict[str, str]) -> None:
        """Inside `.git` itself git still reports the same common dir, and so do we."""
        inside = repo / ".git" / "refs" / "heads"
        found = discover(str(inside), env)
        assert found.kind == "git"
        assert found.common_dir == git_common_dir(inside, env)
        assert found.store_id == discover(str(repo), env).store_id


class TestLinkedWorktree:
    """`git worktree add` worktrees share the main worktree's store."""

    def test_same_store_as_the_main_worktree(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A linked worktree has its own root but the main worktree's common dir and store."""
        linked = add_worktree(repo, tmp_path / "linked", "feature", env)
        main = assert_agrees(repo, env)
        found = assert_agrees(linked, env)
        assert found.root == os.path.realpath(linked)
        assert found.common_dir == main.common_dir
        assert found.name == "repo"
        assert found.store_id == main.store_id

    def test_deep_subdirectory_of_a_linked_worktree(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A subdirectory of a linked worktree still maps to the shared store."""
        linked = add_worktree(repo, tmp_path / "elsewhere" / "wt", "feature", env)
        found = assert_agrees(subdir(linked, "x", "y"), env)
        assert found.root == os.path.realpath(linked)
        assert found.store_id == discover(str(repo), env).store_id

    def test_two_linked_worktrees_share_one_store(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """Every worktree of one clone gets the same store id."""
        first = add_worktree(repo, tmp_path / "one", "one", env)
        second = add_worktree(repo, tmp_path / "two", "two", env)
        ids = {assert_agrees(path, env).store_id for path in (repo, first, second)}
        assert len(ids) == 1


class TestClones:
    """Separate clones never share a store, whatever their folder names."""

    def test_same_folder_name_different_store(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """Two clones both named `proj` in different parents get different store ids."""
        first = clone(repo, tmp_path / "a" / "proj", env)
        second = clone(repo, tmp_path / "b" / "proj", env)
        one = assert_agrees(first, env)
        two = assert_agrees(second, env)
        assert one.name == two.name == "proj"
        assert one.store_id.startswith("proj-")
        assert two.store_id.startswith("proj-")
        assert one.store_id != two.store_id
        assert one.common_dir != two.common_dir

    def test_clone_differs_from_its_origin(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A clone has its own store, distinct from the repository it was cloned from."""
        copy = clone(repo, tmp_path / "copy", env)
        assert assert_agrees(copy, env).store_id != assert_agrees(repo, env).store_id


class TestSubmodule:
    """A submodule is its own repository with its git dir under the superproject's."""

    @pytest.fixture
    def superproject(self, tmp_path: Path, env: dict[str, str]) -> Path:
        """A superproject with one committed submodule at `libs/sub`."""
        library = make_repo(tmp_path / "library", env)
        top = make_repo(tmp_path / "super", env)
        add_submodule(top, library, "libs/sub", env)
        return top

    def test_submodule_has_its_own_common_dir(
        self, superproject: Path, env: dict[str, str]
    ) -> None:
        """Inside the submodule the common dir is `.git/modules/...` of the superproject."""
        inner = superproject / "libs" / "sub"
        found = assert_agrees(inner, env)
        assert found.root == os.path.realpath(inner)
        assert found.common_dir == os.path.realpath(superproject / ".git" / "modules" / "libs/sub")
        assert found.name == "sub"

    def test_submodule_store_differs_from_the_superproject(
        self, superproject: Path, env: dict[str, str]
    ) -> None:
        """The submodule and its superproject never share a store."""
        inner = assert_agrees(subdir(superproject / "libs" / "sub", "deep"), env)
        outer = assert_agrees(superproject, env)
        assert inner.store_id != outer.store_id

    def test_superproject_directory_next_to_the_submodule(
        self, superproject: Path, env: dict[str, str]
    ) -> None:
        """The submodule's parent folder belongs to the superproject."""
        found = assert_agrees(superproject / "libs", env)
        assert found.root == os.path.realpath(superproject)


class TestNestedRepository:
    """A repository inside another repository's working tree (not a submodule)."""

    def test_inner_repository_wins(self, repo: Path, env: dict[str, str]) -> None:
        """Below the inner `.git`, the inner repository is found, not the outer one."""
        inner = make_repo(repo / "vendor" / "inner", env)
        found = assert_agrees(subdir(inner, "src"), env)
        assert found.root == os.path.realpath(inner)
        assert found.common_dir == os.path.realpath(inner / ".git")
        assert found.store_id != discover(str(repo), env).store_id

    def test_outer_repository_around_the_inner_one(self, repo: Path, env: dict[str, str]) -> None:
        """Beside the inner repository, the outer one is found."""
        make_repo(repo / "vendor" / "inner", env)
        found = assert_agrees(repo / "vendor", env)
        assert found.root == os.path.realpath(repo)


class TestBareRepository:
    """A bare repository is identified by itself."""

    @pytest.fixture
    def bare(self, repo: Path, env: dict[str, str], tmp_path: Path) -> Path:
        """A bare clone named `proj.git`."""
        return clone(repo, tmp_path / "bare" / "proj.git", env, "--bare")

    @pytest.mark.parametrize("inside", [(), ("refs", "heads")])
    def test_bare_repository(
        self, bare: Path, env: dict[str, str], inside: tuple[str, ...]
    ) -> None:
        """At the bare repository or below it, the repository is its own root and common dir."""
        cwd = bare.joinpath(*inside)
        assert run_git(cwd, "rev-parse", "--is-bare-repository", env=env) == "true"
        found = discover(str(cwd), env)
        real = os.path.realpath(bare)
        assert found.kind == "git"
        assert found.common_dir == git_common_dir(cwd, env) == real
        assert found.common_dir == gitpython_common_dir(cwd)
        assert found.root == real
        assert found.name == "proj"
        assert found.store_id == store_id_for(real, "proj")
        assert found.store_id.endswith("-" + hashed(real))


class TestGitFile:
    """A `.git` file (`gitdir: ...`) and the ways it can be wrong."""

    def test_relative_gitdir(self, env: dict[str, str], tmp_path: Path) -> None:
        """A relative `gitdir:` is resolved against the folder holding the `.git` file."""
        work = make_repo(tmp_path / "work", env)
        move_git_dir(work, tmp_path / "gitdirs" / "work.git", "gitdir: ../gitdirs/work.git\n")
        found = assert_agrees(subdir(work, "src"), env)
        assert found.root == os.path.realpath(work)
        assert found.common_dir == os.path.realpath(tmp_path / "gitdirs" / "work.git")
        assert found.name == "work"

    def test_relative_gitdir_through_a_symlink_then_dotdot(
        self, env: dict[str, str], tmp_path: Path
    ) -> None:
        """`..` after a symlinked component is resolved physically, as git does."""
        work = make_repo(tmp_path / "work", env)
        real_git = tmp_path / "gitdirs" / "work.git"
        subdir(tmp_path, "deep", "a", "b")
        (tmp_path / "hop").symlink_to(tmp_path / "deep" / "a" / "b")
        # Lexically `hop/../../..` is above tmp_path; physically it is tmp_path itself.
        gitfile = f"gitdir: ../hop/../../../{real_git.relative_to(tmp_path)}\n"
        move_git_dir(work, real_git, gitfile)
        # GitPython normalizes the gitdir lexically and finds nothing: git is the oracle here.
        found = assert_agrees(work, env, gitpython=False)
        assert found.common_dir == os.path.realpath(real_git)

    def test_gitdir_with_crlf(self, env: dict[str, str], tmp_path: Path) -> None:
        """A `.git` file written with a CRLF line ending is still read."""
        work = make_repo(tmp_path / "work", env)
        move_git_dir(work, tmp_path / "store.git", f"gitdir: {tmp_path / 'store.git'}\r\n")
        assert assert_agrees(work, env).common_dir == os.path.realpath(tmp_path / "store.git")

    @pytest.mark.parametrize(
        "content",
        [
            "garbage\n",
            "",
            "gitdir:\n",
            "gitdir: /nonexistent/cortex-test/.git\n",
            "gitdir: ../missing/.git\n",
        ],
        ids=["garbage", "empty", "no-path", "absolute-missing", "relative-missing"],
    )
    def test_broken_gitfile_stops_discovery(
        self, repo: Path, env: dict[str, str], content: str
    ) -> None:
        """Git stops at an unusable `.git` file instead of walking on to the outer repo."""
        broken = subdir(repo, "broken")
        (broken / ".git").write_text(content)
        cwd = subdir(broken, "src")
        assert git_refuses(cwd, env)
        found = discover(str(cwd), env)
        assert found.kind == "directory"
        assert found.root == os.path.realpath(cwd)

    def test_gitdir_prefix_needs_its_space(self, repo: Path, env: dict[str, str]) -> None:
        """`gitdir:/path` (no space) is not a valid gitfile for git, so not for us either."""
        other = make_repo(repo.parent / "other", env)
        broken = subdir(repo, "nospace")
        (broken / ".git").write_text(f"gitdir:{other / '.git'}\n")
        assert git_refuses(broken, env)
        assert discover(str(broken), env).kind == "directory"

    def test_gitdir_keeps_trailing_spaces(self, env: dict[str, str], tmp_path: Path) -> None:
        """Only line endings are stripped from the path, so a trailing space is significant."""
        work = make_repo(tmp_path / "work", env)
        spaced = tmp_path / "store.git "
        subdir(tmp_path, "store.git")  # the same name without the space: must not be chosen
        move_git_dir(work, spaced, f"gitdir: {spaced}\n")
        found = assert_agrees(work, env)
        assert found.common_dir == os.path.realpath(spaced)

    def test_empty_git_directory_is_skipped(self, repo: Path, env: dict[str, str]) -> None:
        """An empty `.git` directory is not a repository: git walks on to the outer one."""
        inner = subdir(repo, "inner")
        subdir(inner, ".git")
        found = assert_agrees(inner, env)
        assert found.root == os.path.realpath(repo)


class TestGitDirectoryValidation:
    """What counts as a git directory follows git's `is_git_directory`."""

    @pytest.mark.parametrize("head", ["garbage\n", "ref: heads/main\n", "abc\n", ""])
    def test_lookalike_with_invalid_head_is_skipped(
        self, repo: Path, env: dict[str, str], head: str
    ) -> None:
        """A folder with HEAD, objects/ and refs/ but an invalid HEAD is not a repository."""
        lookalike = subdir(repo, "fixtures", "lookalike")
        subdir(lookalike, "objects")
        subdir(lookalike, "refs")
        (lookalike / "HEAD").write_text(head)
        found = assert_agrees(lookalike, env)
        assert found.root == os.path.realpath(repo)

    @pytest.mark.parametrize("head", ["ref: refs/heads/main\n", "ref:refs/heads/x", "0" * 40])
    def test_lookalike_with_valid_head_is_a_repository(
        self, repo: Path, env: dict[str, str], head: str
    ) -> None:
        """With a valid HEAD the same folder is a (bare) repository for git and for us."""
        lookalike = subdir(repo, "fixtures", "lookalike")
        subdir(lookalike, "objects")
        subdir(lookalike, "refs")
        (lookalike / "HEAD").write_text(head)
        found = discover(str(lookalike), env)
        assert found.kind == "git"
        assert found.common_dir == git_common_dir(lookalike, env) == os.path.realpath(lookalike)


class TestPlainDirectory:
    """Outside git, cases are keyed by the directory's realpath."""

    def test_plain_directory(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A directory in no repository is kind `directory`, keyed by its realpath, with a note."""
        plain = subdir(tmp_path, "plain")
        found = assert_plain_directory(plain, env)
        assert found.name == "plain"

    def test_subdirectories_are_separate_stores(self, tmp_path: Path, env: dict[str, str]) -> None:
        """Without a repository there is no root to walk up to: each directory is its own key."""
        plain = subdir(tmp_path, "plain")
        deep = subdir(plain, "deep")
        outer = assert_plain_directory(plain, env)
        inner = assert_plain_directory(deep, env)
        assert outer.store_id != inner.store_id

    def test_symlink_to_a_plain_directory(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A symlink to a plain directory is keyed by the directory it points at."""
        plain = subdir(tmp_path, "plain")
        link = tmp_path / "link"
        link.symlink_to(plain)
        via_link = assert_plain_directory(link, env)
        assert via_link.store_id == discover(str(plain), env).store_id

    def test_missing_directory_is_refused(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A working directory that does not exist is invalid input, not a new store."""
        with pytest.raises(InvalidInputError):
            discover(str(tmp_path / "missing"), env)


class TestSymlinks:
    """Symlinks to a repository resolve to the real path."""

    def test_symlink_to_the_repository(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A symlink pointing at the repository gives the real root and the same store id."""
        link = tmp_path / "link-to-repo"
        link.symlink_to(repo)
        found = assert_agrees(link, env)
        assert found.root == os.path.realpath(repo)
        assert found.store_id == discover(str(repo), env).store_id

    def test_symlink_into_a_subdirectory(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A symlink to a folder inside the repository resolves to that repository."""
        inside = subdir(repo, "src", "pkg")
        link = tmp_path / "shortcut"
        link.symlink_to(inside)
        # GitPython walks up `shortcut`'s lexical parents, never reaching the repository.
        found = assert_agrees(link, env, gitpython_at=inside)
        assert found.root == os.path.realpath(repo)
        assert found.store_id == discover(str(repo), env).store_id

    def test_repository_reached_through_a_symlinked_parent(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A symlinked parent folder does not change the store id."""
        parent = tmp_path / "aliased-parent"
        parent.symlink_to(tmp_path)
        found = assert_agrees(parent / "repo", env)
        assert found.store_id == discover(str(repo), env).store_id


class TestEnvironmentOverrides:
    """When git's discovery variables are set, git is asked and its answer is used."""

    def test_git_dir_points_at_another_repository(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """With GIT_DIR set, the repository it names wins over the one around the cwd."""
        import git

        other = make_repo(tmp_path / "other", env)
        overridden = {**env, "GIT_DIR": str(other / ".git")}
        found = discover(str(repo), overridden)
        common, top = git_says(repo, overridden)
        with git.Repo(other / ".git") as by_path:
            assert os.path.realpath(by_path.common_dir) == common
        assert found.kind == "git"
        assert found.common_dir == common == os.path.realpath(other / ".git")
        assert found.root == top  # git: with GIT_DIR alone, the cwd is the top of the worktree
        assert found.store_id == discover(str(other), env).store_id
        assert found.store_id != discover(str(repo), env).store_id

    def test_git_dir_and_work_tree(self, repo: Path, env: dict[str, str]) -> None:
        """GIT_DIR with GIT_WORK_TREE gives the named worktree as root."""
        overridden = {**env, "GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}
        cwd = subdir(repo, "src")
        found = discover(str(cwd), overridden)
        assert (found.common_dir, found.root) == git_says(cwd, overridden)
        assert found.root == os.path.realpath(repo)
        assert found.store_id == discover(str(repo), env).store_id

    def test_git_dir_names_a_bare_repository(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """GIT_DIR naming a bare repository identifies that repository from anywhere."""
        bare = clone(repo, tmp_path / "bare.git", env, "--bare")
        elsewhere = subdir(tmp_path, "elsewhere")
        overridden = {**env, "GIT_DIR": str(bare)}
        found = discover(str(elsewhere), overridden)
        assert found.kind == "git"
        assert found.common_dir == git_common_dir(elsewhere, overridden) == os.path.realpath(bare)
        assert found.store_id == discover(str(bare), env).store_id

    def test_ceiling_hides_the_repository(self, repo: Path, env: dict[str, str]) -> None:
        """GIT_CEILING_DIRECTORIES stops the walk before the repository, as in git."""
        cwd = subdir(repo, "src")
        overridden = {**env, "GIT_CEILING_DIRECTORIES": str(repo)}
        assert git_refuses(cwd, overridden)
        found = discover(str(cwd), overridden)
        assert found.kind == "directory"
        assert found.root == os.path.realpath(cwd)

    def test_unrelated_ceiling_changes_nothing(self, repo: Path, env: dict[str, str]) -> None:
        """A ceiling above the repository gives the same answer as the Python discovery."""
        cwd = subdir(repo, "src")
        overridden = {**env, "GIT_CEILING_DIRECTORIES": str(repo.parent.parent)}
        via_git = discover(str(cwd), overridden)
        assert (via_git.common_dir, via_git.root) == git_says(cwd, overridden)
        assert via_git == discover(str(cwd), env)

    def test_inside_the_git_dir_agrees_with_the_python_discovery(
        self, repo: Path, env: dict[str, str]
    ) -> None:
        """Inside `.git` (no worktree) asking git gives what the Python walk gives."""
        cwd = repo / ".git" / "refs"
        overridden = {**env, "GIT_CEILING_DIRECTORIES": str(repo.parent.parent)}
        via_git = discover(str(cwd), overridden)
        assert via_git.kind == "git"
        assert via_git.common_dir == git_common_dir(cwd, overridden)
        assert via_git == discover(str(cwd), env)

    @pytest.mark.parametrize("name", ["GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR"])
    def test_empty_override_is_what_git_makes_of_it(
        self, repo: Path, env: dict[str, str], name: str
    ) -> None:
        """An exported but empty GIT_DIR (or friend) breaks git's discovery, so it breaks ours."""
        overridden = {**env, name: ""}
        assert git_refuses(repo, overridden)
        assert discover(str(repo), overridden).kind == "directory"

    @pytest.mark.parametrize("name", ["GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"])
    def test_empty_harmless_override(self, repo: Path, env: dict[str, str], name: str) -> None:
        """An empty ceiling or cross-filesystem flag leaves git's discovery unchanged."""
        overridden = {**env, name: ""}
        found = discover(str(repo), overridden)
        assert (found.common_dir, found.root) == git_says(repo, overridden)
        assert found == discover(str(repo), env)


class TestUnusualPaths:
    """Spaces and non-ASCII characters in paths."""

    @pytest.fixture
    def odd(self, tmp_path: Path, env: dict[str, str]) -> Path:
        """A repository at `my projects ü/Répo 日本 x` with one commit."""
        return make_repo(tmp_path / "my projects ü" / "Répo 日本 x", env)

    def test_root_and_subdirectory(self, odd: Path, env: dict[str, str]) -> None:
        """Discovery agrees with both oracles on a path with spaces and non-ASCII characters."""
        top = assert_agrees(odd, env)
        deep = assert_agrees(subdir(odd, "sub dir é", "ñ"), env)
        assert top.name == "Répo 日本 x"
        assert deep.store_id == top.store_id
        assert STORE_ID.fullmatch(top.store_id)
        assert top.store_id.startswith("R-po----x-")

    def test_linked_worktree(self, odd: Path, env: dict[str, str], tmp_path: Path) -> None:
        """A linked worktree at an unusual path shares the store of its main worktree."""
        linked = add_worktree(odd, tmp_path / "wörk tree ✓", "feature", env)
        assert assert_agrees(linked, env).store_id == assert_agrees(odd, env).store_id

    def test_plain_directory(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A plain directory with an unusual name is keyed by its exact realpath."""
        assert_plain_directory(subdir(tmp_path, "notes ä 日"), env)


class TestStoreIdFormat:
    """`<readable name>-<12 lowercase hex of sha256(key)>`."""

    @pytest.mark.parametrize(
        ("name", "readable"),
        [
            ("repo", "repo"),
            ("my repo", "my-repo"),
            ("a/b\\c", "a-b-c"),
            ("Répo", "R-po"),
            ("v1.2_x-y", "v1.2_x-y"),
            (".hidden", "hidden"),
            ("trailing.", "trailing"),
            ("..", "workspace"),
            ("", "workspace"),
            ("日本", "workspace"),
            ("x" * 100, "x" * 64),
        ],
    )
    def test_name_is_reduced(self, name: str, readable: str) -> None:
        """The name keeps only [A-Za-z0-9._-], never starts or ends with `.` or `-`."""
        store_id = store_id_for("/some/key", name)
        assert store_id == f"{readable}-{hashed('/some/key')}"
        assert STORE_ID.fullmatch(store_id)
        assert "/" not in store_id
        assert store_id not in {".", ".."}

    def test_hash_comes_from_the_key_not_the_name(self) -> None:
        """Same name, different keys: different ids; same key: same id."""
        assert store_id_for("/a/proj/.git", "proj") != store_id_for("/b/proj/.git", "proj")
        assert store_id_for("/a/proj/.git", "proj") == store_id_for("/a/proj/.git", "proj")

    def test_non_ascii_key_is_hashed_as_file_system_bytes(self) -> None:
        """The key is hashed as the bytes the file system uses for the path."""
        key = "/srv/Répo 日本/.git"
        assert store_id_for(key, "x").endswith("-" + hashed(key))
        assert hashed(key) != hashed("/srv/Repo/.git")


# -- end to end through the CLI --------------------------------------------------------------


class TestCliStore:
    """The store a command uses comes from this discovery."""

    def test_case_from_a_linked_worktree_is_found_from_the_main_one(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """A case opened in a linked worktree is in the main worktree's own store."""
        linked = add_worktree(repo, tmp_path / "linked", "feature", env)
        cli = Cli(env, repo)
        opened = cli("case", "open", "Fix the login redirect", cwd=linked).data
        status = cli("case", "status", opened["taskId"], cwd=repo).data
        assert status["taskId"] == opened["taskId"]
        assert status["store"]["id"] == opened["store"]["id"]
        assert status["store"]["root"] == opened["store"]["root"]
        assert status["store"]["id"] == discover(str(repo), env).store_id
        listed = cli("case", "list", cwd=repo).data
        assert [item["taskId"] for item in listed["items"]] == [opened["taskId"]]

    def test_case_outside_git(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A case opened outside git reports a `directory` store with a note."""
        plain = subdir(tmp_path, "plain")
        cli = Cli(env, plain)
        task = cli.open()
        status = cli("case", "status", task).data
        assert status["store"]["kind"] == "directory"
        assert status["store"]["note"]
        assert status["store"]["id"] == store_id_for(os.path.realpath(plain), "plain")

    def test_same_named_clones_get_different_stores(
        self, repo: Path, env: dict[str, str], tmp_path: Path
    ) -> None:
        """`case open` in two clones named `proj` reports two different store ids."""
        first = clone(repo, tmp_path / "a" / "proj", env)
        second = clone(repo, tmp_path / "b" / "proj", env)
        one = Cli(env, first)("case", "open", "First goal").data
        two = Cli(env, second)("case", "open", "Second goal").data
        assert one["store"]["kind"] == two["store"]["kind"] == "git"
        assert one["store"]["id"].startswith("proj-")
        assert two["store"]["id"].startswith("proj-")
        assert one["store"]["id"] != two["store"]["id"]
        listed = Cli(env, first)("case", "list").data
        assert [item["taskId"] for item in listed["items"]] == [one["taskId"]]


# -- git_head ---------------------------------------------------------------------------------


class TestGitHead:
    """Branch and commit recorded when a case is opened."""

    def test_branch_and_commit(self, repo: Path, env: dict[str, str]) -> None:
        """On a branch with commits: (branch, full sha, None)."""
        sha = run_git(repo, "rev-parse", "HEAD", env=env)
        assert re.fullmatch(r"[0-9a-f]{40}", sha)
        assert git_head(str(repo), env) == ("main", sha, None)

    def test_detached_head(self, repo: Path, env: dict[str, str]) -> None:
        """On a detached HEAD: (None, sha, None)."""
        (repo / "app.py").write_text("print('second')\n")
        run_git(repo, "commit", "-q", "-am", "second", env=env)
        first = run_git(repo, "rev-parse", "HEAD~1", env=env)
        run_git(repo, "checkout", "-q", "--detach", first, env=env)
        assert git_head(str(repo), env) == (None, first, None)

    def test_no_commits(self, tmp_path: Path, env: dict[str, str]) -> None:
        """A repository with no commits: (branch, None, None)."""
        empty = subdir(tmp_path, "empty")
        run_git(empty, "-c", "init.defaultBranch=trunk", "init", "-q", env=env)
        assert git_head(str(empty), env) == ("trunk", None, None)

    def test_linked_worktree_branch(self, repo: Path, env: dict[str, str], tmp_path: Path) -> None:
        """A linked worktree reports its own branch."""
        linked = add_worktree(repo, tmp_path / "linked", "feature", env)
        sha = run_git(repo, "rev-parse", "HEAD", env=env)
        assert git_head(str(linked), env) == ("feature", sha, None)
