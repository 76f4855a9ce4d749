"""``/connectors``: paths, verbs, status codes and JSON bodies of Kafka Connect."""

from __future__ import annotations

from fastapi.testclient import TestClient

from worker.herder.base import TargetState, TaskId

SOURCE = {"connector.class": "FileStreamSource", "topic": "t", "tasks.max": "2"}


def _info(name: str, config: dict[str, str], tasks: int = 1, kind: str = "source") -> dict:
    return {"name": name, "config": config, "type": kind,
            "tasks": [{"connector": name, "task": n} for n in range(tasks)]}


# --- listing -----------------------------------------------------------------------------


def test_list_connectors_returns_sorted_names(client: TestClient, herder) -> None:
    herder.add("b")
    herder.add("a")
    response = client.get("/connectors")
    assert response.status_code == 200
    assert response.json() == ["a", "b"]


def test_list_connectors_expand_status(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.get("/connectors", params={"expand": "status"})
    assert response.status_code == 200
    assert response.json() == {"a": {"status": {
        "name": "a", "type": "source",
        "connector": {"state": "RUNNING", "worker_id": "127.0.0.1:8083"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "127.0.0.1:8083"}]}}}


def test_list_connectors_expand_info_and_status_together(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.get("/connectors?expand=status&expand=info")
    assert response.status_code == 200
    body = response.json()
    assert set(body["a"]) == {"status", "info"}
    assert body["a"]["info"] == _info("a", herder.configs["a"])


def test_list_connectors_unknown_expansion_is_ignored(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.get("/connectors?expand=bogus")
    assert response.status_code == 200
    assert response.json() == {"a": {}}


def test_list_connectors_skips_connector_deleted_while_expanding(client: TestClient,
                                                                 herder, monkeypatch) -> None:
    herder.add("a")
    herder.add("gone")
    real_status = herder.connector_status

    def status(name: str):
        if name == "gone":
            herder.delete_connector(name)
        return real_status(name)

    monkeypatch.setattr(herder, "connector_status", status)
    response = client.get("/connectors?expand=status")
    assert response.status_code == 200
    assert list(response.json()) == ["a"]


def test_list_connectors_with_trailing_slash(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.get("/connectors/", follow_redirects=False)
    assert response.status_code == 200
    assert response.json() == ["a"]


# --- create ------------------------------------------------------------------------------


def test_create_connector_returns_201_with_location_and_info(client: TestClient,
                                                            herder) -> None:
    response = client.post("/connectors", json={"name": "src", "config": SOURCE})
    assert response.status_code == 201
    assert response.headers["location"] == "http://testserver/connectors/src"
    assert response.json() == _info("src", {**SOURCE, "name": "src"}, tasks=2)
    assert herder.calls == [("put", "src", {**SOURCE, "name": "src"}, False, None)]


def test_create_connector_trims_name_and_coerces_scalars(client: TestClient, herder) -> None:
    body = {"name": "  src ", "config": {"connector.class": "FileStreamSource",
                                          "tasks.max": 1, "batch.size": 1.5,
                                          "errors.log.enable": True}}
    response = client.post("/connectors", json=body)
    assert response.status_code == 201
    assert herder.calls[0][2] == {"connector.class": "FileStreamSource", "tasks.max": "1",
                                  "batch.size": "1.5", "errors.log.enable": "true",
                                  "name": "src"}


def test_create_connector_with_initial_state_is_case_insensitive(client: TestClient,
                                                                  herder) -> None:
    for name, state, target in [("a", "stopped", TargetState.STOPPED),
                                ("b", "Paused", TargetState.PAUSED),
                                ("c", "RUNNING", TargetState.STARTED)]:
        response = client.post("/connectors", json={"name": name, "config": SOURCE,
                                                    "initial_state": state})
        assert response.status_code == 201
        assert herder.targets[name] is target


def test_create_connector_with_invalid_initial_state_is_rejected(client: TestClient,
                                                                 herder) -> None:
    response = client.post("/connectors", json={"name": "a", "config": SOURCE,
                                                "initial_state": "SLEEPING"})
    assert response.status_code == 400
    assert response.json()["error_code"] == 400
    assert response.json()["message"].startswith("Cannot deserialize request body: "
                                                  "initial_state: ")
    assert herder.configs == {}


def test_create_connector_name_mismatch_is_400(client: TestClient, herder) -> None:
    response = client.post("/connectors",
                           json={"name": "a", "config": {**SOURCE, "name": "b"}})
    assert response.status_code == 400
    assert response.json() == {
        "error_code": 400,
        "message": "Connector name configuration (b) doesn't match connector name in the "
                   "URL (a)"}
    assert herder.calls == []


def test_create_connector_without_name_is_400_from_validation(client: TestClient,
                                                               herder) -> None:
    response = client.post("/connectors", json={"name": "   ", "config": SOURCE})
    assert response.status_code == 400
    assert response.json()["message"].startswith(
        "Connector configuration is invalid and contains the following 1 error(s):\n"
        "Invalid value  for configuration name: String may not be empty\n")
    # Like Kafka, REST passes the trimmed (empty) name down; the herder's validation rejects.
    assert herder.calls[0][1] == ""
    assert herder.configs == {}


def test_create_duplicate_connector_is_409(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.post("/connectors", json={"name": "a", "config": SOURCE})
    assert response.status_code == 409
    assert response.json() == {"error_code": 409, "message": "Connector a already exists"}


def test_create_connector_rejects_unknown_fields(client: TestClient, herder) -> None:
    response = client.post("/connectors", json={"name": "a", "config": SOURCE, "tasks": []})
    assert response.status_code == 400
    assert response.json() == {"error_code": 400, "message": "Cannot deserialize request body:"
                               " tasks: Extra inputs are not permitted"}
    assert herder.calls == []


def test_create_connector_rejects_non_string_config_value(client: TestClient) -> None:
    response = client.post("/connectors",
                           json={"name": "a", "config": {"topics": ["a", "b"]}})
    assert response.status_code == 400
    assert response.json()["message"] == ("Cannot deserialize request body: config.topics: "
                                          "Input should be a valid string")


def test_create_connector_with_malformed_json(client: TestClient, herder) -> None:
    response = client.post("/connectors", content=b'{"name": "a",}',
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    body = response.json()
    assert body["error_code"] == 400
    assert body["message"] == ("Cannot deserialize request body: Malformed JSON: Expecting "
                               "property name enclosed in double quotes (at character 13)")
    assert herder.calls == []


def test_create_connector_without_body(client: TestClient) -> None:
    response = client.post("/connectors", headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json() == {"error_code": 400,
                               "message": "Cannot deserialize request body: "
                                          "Request body is missing"}


def test_create_connector_with_non_json_content_type_is_415(client: TestClient) -> None:
    response = client.post("/connectors", content=b"name=a",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 415
    assert response.json() == {"error_code": 415, "message": "HTTP 415 Unsupported Media Type"}


# --- one connector -----------------------------------------------------------------------


def test_get_connector(client: TestClient, herder) -> None:
    herder.add("a", **{"tasks.max": "2"})
    response = client.get("/connectors/a")
    assert response.status_code == 200
    assert response.json() == _info("a", herder.configs["a"], tasks=2)


def test_unknown_connector_is_404_with_herder_message(client: TestClient) -> None:
    for method, path in [("GET", "/connectors/nope"), ("GET", "/connectors/nope/config"),
                         ("GET", "/connectors/nope/status"), ("GET", "/connectors/nope/tasks"),
                         ("DELETE", "/connectors/nope"), ("PUT", "/connectors/nope/pause"),
                         ("PUT", "/connectors/nope/resume"), ("PUT", "/connectors/nope/stop"),
                         ("POST", "/connectors/nope/restart")]:
        response = client.request(method, path)
        assert response.status_code == 404, (method, path)
        assert response.json() == {"error_code": 404, "message": "Connector nope not found"}


def test_connector_name_with_spaces_and_symbols(client: TestClient, herder) -> None:
    response = client.put("/connectors/my%20conn%3F/config", json=SOURCE)
    assert response.status_code == 201
    assert response.headers["location"] == "http://testserver/connectors/my%20conn%3F"
    assert response.json()["name"] == "my conn?"
    assert client.get("/connectors/my%20conn%3F/status").json()["name"] == "my conn?"


def test_delete_connector_is_204(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.delete("/connectors/a")
    assert response.status_code == 204
    assert response.content == b""
    assert herder.configs == {}


def test_get_connector_config(client: TestClient, herder) -> None:
    herder.add("a", topic="t")
    response = client.get("/connectors/a/config")
    assert response.status_code == 200
    assert response.json() == {"connector.class": "FileStreamSource", "name": "a",
                               "topic": "t"}


def test_put_config_creates_with_201_then_updates_with_200(client: TestClient,
                                                          herder) -> None:
    created = client.put("/connectors/a/config", json=SOURCE)
    assert created.status_code == 201
    assert created.headers["location"] == "http://testserver/connectors/a"
    assert created.json() == _info("a", {**SOURCE, "name": "a"}, tasks=2)

    updated = client.put("/connectors/a/config?forward=true", json={**SOURCE, "topic": "u"})
    assert updated.status_code == 200
    assert "location" not in updated.headers
    assert updated.json()["config"]["topic"] == "u"
    assert herder.calls[1] == ("put", "a", {**SOURCE, "topic": "u", "name": "a"}, True, None)


def test_put_config_name_mismatch_is_400(client: TestClient, herder) -> None:
    response = client.put("/connectors/a/config", json={**SOURCE, "name": "b"})
    assert response.status_code == 400
    assert response.json() == {
        "error_code": 400,
        "message": "Connector name configuration (b) doesn't match connector name in the "
                   "URL (a)"}
    assert herder.calls == []


def test_put_config_body_must_be_an_object(client: TestClient) -> None:
    response = client.put("/connectors/a/config", json=["x"])
    assert response.status_code == 400
    assert response.json()["message"] == ("Cannot deserialize request body: "
                                          "Input should be a valid dictionary")


def test_patch_config_passes_nulls_to_remove_keys(client: TestClient, herder) -> None:
    herder.add("a", topic="t", extra="x")
    response = client.patch("/connectors/a/config", json={"topic": "u", "extra": None,
                                                           "tasks.max": 3})
    assert response.status_code == 200
    assert herder.calls == [("patch", "a", {"topic": "u", "extra": None, "tasks.max": "3"})]
    assert response.json() == _info("a", {"connector.class": "FileStreamSource", "name": "a",
                                          "topic": "u", "tasks.max": "3"}, tasks=3)


def test_patch_unknown_connector_is_404(client: TestClient) -> None:
    response = client.patch("/connectors/nope/config", json={"topic": "u"})
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Connector nope not found"}


# --- status and tasks --------------------------------------------------------------------


def test_status_includes_trace_only_when_set(client: TestClient, herder) -> None:
    herder.add("a", **{"tasks.max": "2"})
    herder.traces[TaskId("a", 1)] = "java.lang.RuntimeException: boom"
    response = client.get("/connectors/a/status")
    assert response.status_code == 200
    assert response.json() == {
        "name": "a", "type": "source",
        "connector": {"state": "RUNNING", "worker_id": "127.0.0.1:8083"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "127.0.0.1:8083"},
                  {"id": 1, "state": "FAILED", "worker_id": "127.0.0.1:8083",
                   "trace": "java.lang.RuntimeException: boom"}]}


def test_task_configs(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.get("/connectors/a/tasks")
    assert response.status_code == 200
    assert response.json() == [{"id": {"connector": "a", "task": 0},
                                "config": {"task.class": "FileStreamSourceTask",
                                           **herder.configs["a"]}}]


def test_task_status(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.get("/connectors/a/tasks/0/status")
    assert response.status_code == 200
    assert response.json() == {"id": 0, "state": "RUNNING", "worker_id": "127.0.0.1:8083"}


def test_unknown_task_is_404(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.get("/connectors/a/tasks/7/status")
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "No status found for task a-7"}


def test_non_integer_task_id_is_404_as_in_jax_rs(client: TestClient, herder) -> None:
    herder.add("a")
    for method, path in [("GET", "/connectors/a/tasks/x/status"),
                         ("POST", "/connectors/a/tasks/x/restart")]:
        response = client.request(method, path)
        assert response.status_code == 404
        assert response.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}


# --- control -----------------------------------------------------------------------------


def test_plain_restart_is_204(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.post("/connectors/a/restart")
    assert response.status_code == 204
    assert response.content == b""
    assert herder.calls == [("restart", "a", False, False)]


def test_restart_with_tasks_is_202_with_state(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.post("/connectors/a/restart?includeTasks=TRUE&onlyFailed=false")
    assert response.status_code == 202
    assert herder.calls == [("restart", "a", True, False)]
    assert response.json() == {
        "name": "a", "type": "source",
        "connector": {"state": "RESTARTING", "worker_id": "127.0.0.1:8083"},
        "tasks": [{"id": 0, "state": "RESTARTING", "worker_id": "127.0.0.1:8083"}]}


def test_restart_flag_values_other_than_true_mean_false(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.post("/connectors/a/restart?includeTasks=yes&onlyFailed=1")
    assert response.status_code == 204
    assert herder.calls == [("restart", "a", False, False)]


def test_restart_task_is_204(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.post("/connectors/a/tasks/0/restart")
    assert response.status_code == 204
    assert herder.calls == [("restart_task", TaskId("a", 0))]


def test_pause_and_resume_are_202_without_body(client: TestClient, herder) -> None:
    herder.add("a")
    paused = client.put("/connectors/a/pause")
    assert (paused.status_code, paused.content) == (202, b"")
    assert herder.targets["a"] is TargetState.PAUSED
    resumed = client.put("/connectors/a/resume")
    assert (resumed.status_code, resumed.content) == (202, b"")
    assert herder.targets["a"] is TargetState.STARTED


def test_stop_is_204(client: TestClient, herder) -> None:
    herder.add("a")
    response = client.put("/connectors/a/stop")
    assert (response.status_code, response.content) == (204, b"")
    assert herder.targets["a"] is TargetState.STOPPED
    assert client.get("/connectors/a/status").json()["connector"]["state"] == "STOPPED"
