"""`cerebras.appliance.errors`: the exceptions the appliance client raises, by the real package's
names and hierarchy, so that ModelZoo's `except` clauses (restartable_trainer.py's retry on
ApplianceNanError, ApplianceDeadlockError, ...) name classes that exist.

Nothing here raises them: a run on csd fails with csadmin's coded errors (csadmin.errors), which
are none of these, so ModelZoo's retry logic sees what it sees for a user's bug, and stops.
"""

from __future__ import annotations


def cerebras_support_msg(msg: str) -> str:
    """`msg` followed by the real package's request to contact support."""
    return (f"{msg}\nWe have encountered an internal error from Cerebras Software Stack. For further help, "
            "please reach out to Cerebras support team at support@cerebras.net")


class ApplianceClientException(Exception):
    """Base of the appliance client's errors."""


class ApplianceUnknownError(ApplianceClientException):
    """An error the appliance could not classify."""


class ApplianceCorruptionError(ApplianceClientException):
    """The appliance's state is corrupt."""


class ApplianceDeadlockError(ApplianceClientException):
    """The run deadlocked on the appliance."""


class ApplianceForceCollectDebug(ApplianceClientException):
    """The appliance asks for its debug artifacts to be collected."""


class ApplianceHealthPollException(ApplianceCorruptionError):
    """A health poll of the appliance failed."""


class ApplianceNanError(ApplianceClientException):
    """A NaN was found in the run's tensors."""


class ApplianceTensorDropped(ApplianceClientException):
    """A tensor was dropped by the appliance."""


class ApplianceDropModeComplete(ApplianceClientException):
    """The appliance's drop mode completed."""


class ApplianceRequestCancelled(ApplianceClientException):
    """A request to the appliance was cancelled."""


class ApplianceCompilationError(ApplianceClientException):
    """The compile failed."""


class ApplianceRuntimeServerError(ApplianceClientException):
    """The appliance's runtime server failed."""


class ApplianceServiceInterrupted(ApplianceClientException):
    """The appliance's service was interrupted."""


class ApplianceRuntimeJobTimeoutError(ApplianceClientException):
    """The runtime job ran out of time."""


class ApplianceVersionError(ApplianceClientException):
    """The client's and the cluster's versions do not match."""


class ApplianceCsctlError(ApplianceClientException):
    """csctl failed."""


class ApplianceUserVenvClusterVolumeError(ApplianceClientException):
    """The user's venv could not be mounted on the cluster."""


class ApplianceResourceExhausted(ApplianceClientException):
    """The cluster has no resources left for the job."""


class ClusterJobCancelledByCsctl(ApplianceClientException):
    """The cluster job was cancelled with csctl."""


class ClusterJobScheduleError(ApplianceClientException):
    """The cluster could not schedule job `job_id`."""

    def __init__(self, job_id: str, message: str):
        super().__init__(message)
        self.job_id = job_id
        self.message = message


class ClusterJobInitError(ApplianceClientException):
    """Job `job_id` failed to initialize."""

    def __init__(self, job_id: str, message: str):
        super().__init__(message)
        self.job_id = job_id
        self.message = message
