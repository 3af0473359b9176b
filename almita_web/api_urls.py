"""REST API routes: artifacts, jobs, the caller's reviews, releases, evaluation runs, schema, docs."""
from django.urls import include, path
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from almita_web.api.common import role_permission
from almita_web.api.docs import ANY_ROLE, SchemaView, api_docs
from curation.loop import api as loop_api
from curation.releases import api as release_api
from curation.reviews import api as review_api
from curation.reviews.assignment_api import AssignmentsView
from evaluation import api as evaluation_api
from generation import api as generation_api
from generation.import_api import ImportView

app_name = "api"


class Router(DefaultRouter):
    """The browsable API root; it checks the role like every other endpoint."""

    def get_api_root_view(self, api_urls=None):
        view = super().get_api_root_view(api_urls)
        view.cls.permission_classes = [role_permission(*ANY_ROLE)]
        return view


router = Router()
router.register("intents", generation_api.IntentViewSet, basename="intent")
router.register("procedures", generation_api.ProcedureViewSet, basename="procedure")
router.register("apis", generation_api.ApiViewSet, basename="api")
router.register("flowgraphs", generation_api.FlowgraphViewSet, basename="flowgraph")
router.register("conversation-graphs", generation_api.ConversationGraphViewSet, basename="conversationgraph")
router.register("paths", generation_api.SampledPathViewSet, basename="path")
router.register("conversations", generation_api.ConversationViewSet, basename="conversation")
router.register("tests", generation_api.TestViewSet, basename="test")
router.register("jobs", generation_api.JobViewSet, basename="job")
router.register("reviews", review_api.ReviewViewSet, basename="review")
router.register("releases", release_api.ReleaseViewSet, basename="release")
router.register("evaluation-runs", evaluation_api.EvaluationRunViewSet, basename="evaluationrun")
router.register("agents", evaluation_api.AgentViewSet, basename="agent")
router.register("session-runs", evaluation_api.SessionRunViewSet, basename="sessionrun")

urlpatterns = [
    path("auth/token/", obtain_auth_token, name="token"),
    path("schema/", SchemaView.as_view(), name="schema"),
    path("docs/", api_docs, name="docs"),
    path("imports/", ImportView.as_view(), name="imports"),
    path("coverage/", loop_api.CoverageView.as_view(), name="coverage"),
    path("gaps/fill/", loop_api.FillGapsView.as_view(), name="fill_gaps"),
    path("economics/", loop_api.EconomicsView.as_view(), name="economics"),
    path("feedback/regenerate/", loop_api.RegenerateView.as_view(), name="regenerate"),
    path("assignments/", AssignmentsView.as_view(), name="assignments"),
    path("", include(router.urls)),
]
