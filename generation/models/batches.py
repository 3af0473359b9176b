"""What an endpoint can do (structured outputs, batches), and the Batch API's batches and their requests.

`EndpointCapability` remembers, per endpoint (its public URL, never the key) and model, whether the
endpoint accepted a JSON Schema `response_format` and whether it serves `/batches`: learnt once
from a reply (or the endpoint test on the jobs page) and read by every later call.

A job in batch mode (config `batch: true`) does not send its stages' chat requests one by one:
each becomes a `BatchRequest` (its exact request body, keyed on the job and the request hash),
which the periodic poll (llm/batches.py) writes as JSONL, uploads to `/files`, submits as an
`LLMBatch` to `/batches`, polls, and reads back. The item whose request it was is then run again
and finds its reply there, through the same parsing, validation, repair and cache as online.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from generation.models.jobs import GenerationJob


class EndpointCapability(models.Model):
    endpoint = models.CharField(max_length=300)  # public_endpoint(): no user:password part
    model = models.CharField(max_length=200, blank=True)
    # "openai" (any OpenAI-compatible base URL) or "azure" (Azure OpenAI: deployments, api-version).
    provider = models.CharField(max_length=16, default="openai")
    # None: not known yet. True/False: the endpoint accepted / refused a json_schema response_format.
    structured_outputs = models.BooleanField(null=True, blank=True)
    batches = models.BooleanField(null=True, blank=True)
    checked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "model"], name="capability_unique_endpoint_model")]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.model}"


class BatchStatus(models.TextChoices):
    SUBMITTED = "submitted", "Submitted"
    INGESTING = "ingesting", "Reading results"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class LLMBatch(models.Model):
    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="llm_batches")
    endpoint = models.CharField(max_length=300)
    remote_id = models.CharField(max_length=200, blank=True)  # the provider's batch id
    input_file_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=BatchStatus.choices, default=BatchStatus.SUBMITTED)
    # The provider's own status (validating, in_progress, completed, failed, expired, cancelled).
    remote_status = models.CharField(max_length=32, blank=True)
    requests = models.PositiveIntegerField(default=0)
    succeeded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    expired = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The last time the poll asked the provider about it: a job waiting for a batch is not stalled.
    polled_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.CheckConstraint(condition=Q(status__in=BatchStatus.values), name="llmbatch_status_valid")]

    def __str__(self) -> str:
        return f"batch {self.remote_id or self.pk} ({self.status})"


class BatchRequestState(models.TextChoices):
    PENDING = "pending", "Waiting for the next batch"
    SUBMITTED = "submitted", "In a batch"
    DONE = "done", "Replied"
    FAILED = "failed", "Failed for good"


class BatchRequest(models.Model):
    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="batch_requests")
    digest = models.CharField(max_length=64)  # the request's cache key (llm.client.cache_key)
    stage = models.CharField(max_length=32)
    key = models.CharField(max_length=200)  # the work item to run again once the reply is in
    body = models.JSONField(default=dict)  # the chat request exactly as it is sent (no key)
    # The LLMCall fields of the call (stage, template, repair turn, logged request...), for its row.
    meta = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=BatchRequestState.choices, default=BatchRequestState.PENDING)
    batch = models.ForeignKey(LLMBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="lines")
    # Batches this request was in (a failed or expired line goes into the next batch, up to LLM_MAX_RETRIES).
    attempts = models.PositiveSmallIntegerField(default=0)
    call = models.ForeignKey("generation.LLMCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "digest"], name="batchrequest_unique_job_digest"),
            models.CheckConstraint(condition=Q(state__in=BatchRequestState.values), name="batchrequest_state_valid"),
        ]
        indexes = [models.Index(fields=["state", "job"], name="batchrequest_state_job")]
