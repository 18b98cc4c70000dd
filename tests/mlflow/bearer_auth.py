"""Token authentication for `mlflow server --app-name basic-auth`, through the plug point MLflow
documents for it ("Custom Authentication": basic_auth.ini's authorization_function): a request that
carries `Authorization: Bearer <GPUTRAIN_TEST_MLFLOW_TOKEN>` is the user GPUTRAIN_TEST_MLFLOW_USER
(the app's admin); any other request is refused with 401, as a token-checking proxy in front of a
team's server refuses it. mlflow_server.Server(token=...) configures it."""
import os

from flask import Response, make_response, request
from werkzeug.datastructures import Authorization


def authenticate_request_bearer_token():
    if request.headers.get("Authorization", "") == "Bearer " + os.environ["GPUTRAIN_TEST_MLFLOW_TOKEN"]:
        return Authorization("bearer", {"username": os.environ["GPUTRAIN_TEST_MLFLOW_USER"]})
    response: Response = make_response("a bearer token is required")
    response.status_code = 401
    response.headers["WWW-Authenticate"] = "Bearer"
    return response
