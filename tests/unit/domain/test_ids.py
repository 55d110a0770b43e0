from datetime import datetime, timezone

import pytest

from memo_analytics.domain.errors import InvalidFieldError
from memo_analytics.domain.ids import new_session_id, prompt_id, session_record_id, validate_slug

NOW = datetime(2026, 1, 5, 9, 30, 0, 123000, tzinfo=timezone.utc)


def test_prompt_id_with_session_and_turn_is_deterministic():
    assert prompt_id("abc", 3, NOW) == "prompt-abc-t3"


def test_prompt_id_without_session_is_epoch_ms_and_6_hex():
    pid = prompt_id(None, None, NOW)
    prefix, epoch, suffix = pid.split("-")
    assert prefix == "prompt"
    assert epoch == str(int(NOW.timestamp() * 1000)) == "1767605400123"
    assert len(suffix) == 6 and all(c in "0123456789abcdef" for c in suffix)


def test_session_record_id():
    assert session_record_id("s1") == "session-s1"


def test_generated_session_id_is_timestamp_and_6_hex():
    sid = new_session_id(NOW)
    stamp, suffix = sid.rsplit("-", 1)
    assert stamp == "20260105T093000Z"
    assert len(suffix) == 6 and int(suffix, 16) >= 0


@pytest.mark.parametrize("bad", ["..", "a/b", "a\\b", "../etc", "a\x00b", "x" * 201, "", ".hidden", "-flag", "a b", "ä"])
def test_unsafe_ids_are_refused_naming_the_field(bad):
    with pytest.raises(InvalidFieldError) as info:
        validate_slug(bad, "sessionId")
    assert str(info.value).startswith("Invalid sessionId:")


@pytest.mark.parametrize("good", ["abc", "A-1_b.c", "019ac364-f0dc-7043", "x" * 200])
def test_safe_ids_pass(good):
    assert validate_slug(good, "project") == good


@pytest.mark.parametrize("folder, project", [
    ("飞书项目", "feishuxiangmu"), ("日本語", "ribenyu"), ("café", "cafe"), ("ünï cödé", "uni-code"),
    ("проект", "proekt"), ("my-repo", "my-repo"), ("Shop API", "shop-api"),
])
def test_a_folder_name_outside_ascii_is_written_in_ascii_not_dropped(folder, project):
    """Found by a tester of bad files: 飞书项目 and 日本語 were both the project ``untitled`` and café
    ``caf`` — two clients' folders one project, their work billed together."""
    from memo_analytics.domain.ids import project_slug

    assert project_slug(folder) == project


def test_a_folder_name_of_no_letters_is_a_project_of_its_own():
    from memo_analytics.domain.ids import project_slug

    assert project_slug("???") != project_slug("!!!")
    assert project_slug("???").startswith("project-") and validate_slug(project_slug("???"), "project")
    assert project_slug("untitled") == "untitled"
