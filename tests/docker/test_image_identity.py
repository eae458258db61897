"""The image a run used, as the real dockerd reports it: `docker image inspect` Id and RepoDigests."""
from __future__ import annotations

import pytest

from specops.launch import ImageMissing
from tests.docker.conftest import _rootfs_tar

pytestmark = pytest.mark.integration


def test_the_identity_is_the_engines_content_id_and_an_imported_image_has_no_repo_digest(dockerd, launcher,
                                                                                          test_image):
    identity = launcher.image_identity(test_image)
    assert identity.id == dockerd.images.get(test_image).id and identity.id.startswith("sha256:")
    assert identity.digest is None  # `docker import`ed here: no registry manifest references it


def test_a_tag_moved_to_other_bytes_gets_another_id(dockerd, launcher, test_image):
    """What a re-pull of a moving tag does: the engine cache key (image Id) changes with it."""
    before = launcher.image_identity(test_image).id
    moved = "specops-test/moving:1"
    dockerd.api.import_image_from_data(_rootfs_tar(), repository="specops-test/moving", tag="1",
                                       changes=["ENV PATH=/bin", "LABEL rebuilt=yes"])
    try:
        assert launcher.image_identity(moved).id != before
    finally:
        dockerd.images.remove(moved, force=True)


def test_an_absent_image_is_named_with_its_fix(launcher):
    with pytest.raises(ImageMissing, match=r"specops-test/absent:1 is not present: run `docker pull"):
        launcher.image_identity("specops-test/absent:1")
