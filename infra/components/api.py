"""The API concern: the ``Api`` function (every use case, for every tenant) and the gateway in
front of it (``gateway.py``).

``Api`` -- ``functions.api.handler``, ``api.memoryMb``, 29 s (API Gateway's own limit):

* environment: the service environment (``FunctionFactory``), nothing of its own;
* timeline: item reads and writes, Query on the tenant indexes (``by_actor``, ``by_type``,
  ``by_project``, ``by_tenant``, ``by_review_status``);
* audit: append, and read (the operators' ``GET /v1/audit``) -- the only function that reads it;
* archive: read, write and delete versions (restore and erasure);
* Bedrock: the Titan embedding model; Step Functions: start reviews, answer task tokens;
* OpenSearch: HTTP access to the recall index, when there is one.

The tenant is not an IAM boundary here (the *pool* model): the code scopes every call by the
token's tenant; ``tenancy.py`` has the IAM wall for principals that act for one tenant.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.components import bedrock
from infra.components.data import TENANT_INDEXES, DataStores
from infra.components.functions import FunctionFactory, ServiceFunction
from infra.components.gateway import RestApi
from infra.components.ids import StackLevelScope
from infra.components.search import SearchDomain
from infra.components.statemachines import grant_review_access
from infra.config import StageConfig


class ApiService(Construct):
    """The ``Api`` function and the REST API that invokes it.

    Give it the id ``Rest`` (the gateway's id in the flat stack): the gateway is its ``Default``
    child and the function sits in a ``StackLevelScope``, so neither is renamed (``ids.py``)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        data: DataStores,
        functions: FunctionFactory,
        search: SearchDomain | None,
        authorizer: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, id)
        self.function = self._api_function(StackLevelScope(self, "Functions"), config, data, functions, search)
        self.functions = {"Api": self.function}
        self.gateway = RestApi(
            self,
            "Default",
            config=config.api,
            stage=config.stage,
            handler=self.function.function,
            authorizer_function=authorizer,
            key=data.key,
            log_retention=functions.log_retention,
        )

    @staticmethod
    def _api_function(
        scope: Construct,
        config: StageConfig,
        data: DataStores,
        functions: FunctionFactory,
        search: SearchDomain | None,
    ) -> ServiceFunction:
        api = functions.service_function(
            scope,
            "Api",
            "functions.api.handler",
            "REST API",
            memory_mb=config.api.memory_mb,
            timeout=cdk.Duration.seconds(29),
        )
        data.grant_timeline(api.role, write=True, indexes=TENANT_INDEXES)
        data.grant_audit(api.role, read=True)
        data.grant_archive(api.role, read=True, delete=True)
        bedrock.grant_invoke(api.role, config.titan_model_id)
        grant_review_access(api.role, config, start=True)
        if search is not None:
            search.grant(api.role)  # recall reads the index
        return api
