//! The routes: the UI's files, and the JSON API under `/api`.

use crate::guard::{COOKIE, Guard, Refusal, TokenSource};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use strobe_core::ToolError;
use strobe_session::SessionManager;
use strobe_store::Store;

/// What every handler shares.
pub struct State {
    pub mgr: Arc<SessionManager>,
    /// The daemon's test runs (`/api/tests`).
    pub tests: Arc<strobe_testrun::TestRunner>,
    pub store: Store,
    pub guard: Guard,
    pub ui_dir: Option<PathBuf>,
    /// Open live streams (the host counts them as clients).
    pub viewers: Arc<std::sync::atomic::AtomicUsize>,
}

type Shared = axum::extract::State<Arc<State>>;

pub fn router(state: Arc<State>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/{*path}", get(asset))
        .route(
            "/api/health",
            get(|| async { axum::Json(json!({"ok": true})) }),
        )
        .route("/api/sessions", get(sessions))
        .route("/api/sessions/{id}", get(session))
        .route("/api/sessions/{id}/timeline", get(timeline))
        .route("/api/sessions/{id}/query", post(query))
        .route("/api/sessions/{id}/export", get(export))
        .route("/api/sessions/{id}/events/{event}", get(event))
        .route(
            "/api/sessions/{id}/events/{event}/screenshot",
            get(screenshot),
        )
        .route("/api/sessions/{id}/agent", get(agent))
        .route("/api/sessions/{id}/trace", post(trace))
        .route("/api/sessions/{id}/live", get(live))
        .route("/api/diff", get(diff))
        .route("/api/tests", get(tests))
        .route("/api/tests/{id}", get(test))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "no such page or API route",
            )
        })
        .layer(middleware::from_fn_with_state(state.clone(), check))
        .with_state(state)
}

/// Every request passes the guard first. The UI's own files under
/// `/assets/` (the built bundle: code and styles, no data) need no token,
/// only the Host, Origin and fetch-site checks: a page framed by another
/// site (an editor's webview) loads them without the SameSite cookie,
/// while its API requests carry the token as a Bearer header.
async fn check(s: Shared, req: Request, next: Next) -> Response {
    let public_asset =
        req.method() == axum::http::Method::GET && req.uri().path().starts_with("/assets/");
    let verdict = match s.guard.check(req.headers(), req.uri().query()) {
        Err(Refusal::Token) if public_asset => return next.run(req).await,
        v => v,
    };
    match verdict {
        Ok(source) => {
            let from_query = source == TokenSource::Query;
            let mut resp = next.run(req).await;
            // The page's own requests then carry the token as a cookie.
            if from_query
                && let Ok(v) = HeaderValue::from_str(&format!(
                    "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
                    s.guard.token()
                ))
            {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
            resp
        }
        Err(r) => {
            let status = match r {
                Refusal::Token => StatusCode::UNAUTHORIZED,
                Refusal::Host(_) | Refusal::Origin(_) | Refusal::CrossSite(_) => {
                    StatusCode::FORBIDDEN
                }
            };
            tracing::warn!("web request refused: {}", r.message());
            // A person opening the page gets a page that says what to do.
            let wants_page = req
                .headers()
                .get(header::ACCEPT)
                .and_then(|a| a.to_str().ok())
                .is_some_and(|a| a.contains("text/html"));
            if wants_page {
                return (
                    status,
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    format!(
                        "<!doctype html><title>Strobe: refused</title><h1>Strobe refused this request</h1>\
                         <p>{}</p><p>Run <code>strobe ui</code> and open the URL it prints: it carries \
                         this daemon's access token.</p>",
                        html_escape(&r.message())
                    ),
                )
                    .into_response();
            }
            error(status, "REFUSED", &r.message())
        }
    }
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    ApiError::new(status, code, message).into_response()
}

/// A refused or failed API request: `{"error": {code, message}}`.
pub struct ApiError {
    status: StatusCode,
    code: String,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &str, message: &str) -> Self {
        Self {
            status,
            code: code.to_string(),
            message: message.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            axum::Json(json!({"error": {"code": self.code, "message": self.message}})),
        )
            .into_response()
    }
}

/// A failure of the layers below as the API answers it: the code an agent
/// would get, and the HTTP status it stands for.
fn tool_error(e: impl Into<ToolError>) -> ApiError {
    let e: ToolError = e.into();
    let status = match e.code {
        strobe_core::ErrorCode::SessionNotFound => StatusCode::NOT_FOUND,
        strobe_core::ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, e.code.as_str(), &e.message)
}

fn view_error(e: strobe_view::ViewError) -> ApiError {
    match e {
        strobe_view::ViewError::NoSession(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "SESSION_NOT_FOUND", &e.to_string())
        }
        other => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            &other.to_string(),
        ),
    }
}

/// Runs blocking store/session work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            &format!("handler panicked: {e}"),
        ))
    })
}

fn json_result<T: serde::Serialize>(r: Result<T, ApiError>) -> Response {
    match r {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn index(s: Shared) -> Response {
    let Some(dir) = s.ui_dir.clone() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            "<!doctype html><title>Strobe</title><p>The web UI is not built. Run <code>./dev ui</code> \
             in Strobe's checkout (or set STROBE_UI_DIR to a built <code>ui/dist</code>). The JSON API \
             under <code>/api</code> works meanwhile.</p>",
        )
            .into_response();
    };
    file(dir.join("index.html")).await
}

async fn asset(s: Shared, Path(path): Path<String>) -> Response {
    let Some(dir) = s.ui_dir.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "the web UI is not built",
        );
    };
    // Only plain relative names below assets/: no way out of the folder.
    if path
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == ".." || c.contains('\\'))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            "bad asset path",
        );
    }
    file(dir.join("assets").join(path)).await
}

async fn file(path: PathBuf) -> Response {
    let mime = match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => ([(header::CONTENT_TYPE, mime)], bytes).into_response(),
        Err(_) => error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "no such file in the web UI",
        ),
    }
}

async fn sessions(s: Shared) -> Response {
    json_result(blocking(move || s.mgr.list().map_err(tool_error)).await)
}

async fn session(s: Shared, Path(id): Path<String>) -> Response {
    json_result(blocking(move || s.mgr.status_with_threads(&id).map_err(tool_error)).await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TimelineParams {
    from: Option<u64>,
    to: Option<u64>,
    columns: Option<u32>,
    /// The token may come in the query; it is not a timeline parameter.
    #[allow(dead_code)]
    token: Option<String>,
}

async fn timeline(s: Shared, Path(id): Path<String>, Query(p): Query<TimelineParams>) -> Response {
    let columns = p.columns.unwrap_or(1000);
    if columns == 0 || columns > strobe_view::timeline::MAX_COLUMNS {
        return error(
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            &format!(
                "'columns' must be 1 to {}",
                strobe_view::timeline::MAX_COLUMNS
            ),
        );
    }
    if let (Some(f), Some(t)) = (p.from, p.to)
        && t <= f
    {
        return error(
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            "'to' must be after 'from'",
        );
    }
    let window = strobe_view::timeline::Window {
        from_ns: p.from.unwrap_or(0),
        to_ns: p.to,
        columns,
    };
    json_result(
        blocking(move || {
            let _ = s.store.flush();
            strobe_view::timeline::build(&s.store, &id, window).map_err(view_error)
        })
        .await,
    )
}

/// `debug_diff`'s arguments in the query string (`functions` comma-separated).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DiffQuery {
    baseline: String,
    candidate: String,
    functions: Option<String>,
    max_items: Option<i64>,
    /// The token may come in the query; it is not a diff parameter.
    #[allow(dead_code)]
    token: Option<String>,
}

/// `debug_diff`'s answer, with its text under `text`.
async fn diff(s: Shared, Query(q): Query<DiffQuery>) -> Response {
    let p = strobe_query::diff::DiffParams {
        baseline: q.baseline,
        candidate: q.candidate,
        functions: q.functions.map(|f| {
            f.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()
        }),
        max_items: q.max_items,
    };
    json_result(
        blocking(move || {
            let (mut v, text) = strobe_query::diff::run_diff(&s.mgr, p).map_err(tool_error)?;
            v["text"] = json!(text);
            Ok(v)
        })
        .await,
    )
}

/// `debug_query`'s arguments as a JSON body (the session comes from the path).
async fn query(s: Shared, Path(id): Path<String>, body: axum::Json<Value>) -> Response {
    let mut args = body.0;
    let Some(obj) = args.as_object_mut() else {
        return error(
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            "the body must be a JSON object of debug_query's arguments",
        );
    };
    obj.insert("sessionId".into(), json!(id));
    let params: strobe_query::QueryParams = match serde_json::from_value(args) {
        Ok(p) => p,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                &format!("bad query: {e}"),
            );
        }
    };
    json_result(blocking(move || strobe_query::query(&s.mgr, params).map_err(tool_error)).await)
}

async fn event(s: Shared, Path((id, event)): Path<(String, u64)>) -> Response {
    json_result(blocking(move || strobe_query::event(&s.mgr, &id, event).map_err(tool_error)).await)
}

/// The screenshot a `ui_snapshot` event names, as PNG. Only a file in the
/// session's own screenshot directory is served, whatever the event says.
async fn screenshot(s: Shared, Path((id, event)): Path<(String, u64)>) -> Response {
    let r = blocking(move || {
        let found = strobe_query::event(&s.mgr, &id, event).map_err(tool_error)?;
        let not_found = |what: String| ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", &what);
        let path = found["event"]["screenshot"]
            .as_str()
            .ok_or_else(|| not_found(format!("event {event} of session {id} has no screenshot")))?
            .to_string();
        let dir = s.mgr.ui_dir(&id);
        let (Ok(file), Ok(dir)) = (std::fs::canonicalize(&path), std::fs::canonicalize(&dir))
        else {
            return Err(not_found(format!(
                "the screenshot {path} is gone (the session's data was deleted?)"
            )));
        };
        if !file.starts_with(&dir) {
            return Err(not_found(format!(
                "{path} is not one of the session's screenshots"
            )));
        }
        std::fs::read(&file).map_err(|e| not_found(format!("{path}: {e}")))
    })
    .await;
    match r {
        Ok(bytes) => Response::builder()
            .header(header::CONTENT_TYPE, "image/png")
            .header(header::CACHE_CONTROL, "no-store")
            .body(Body::from(bytes))
            .unwrap_or_else(|e| {
                error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL_ERROR",
                    &e.to_string(),
                )
            }),
        Err(e) => e.into_response(),
    }
}

/// One agent call as the UI reads it; `offsetNs` places it on the
/// session's timeline (negative: before the launch).
pub(crate) fn agent_call_json(c: &strobe_store::AgentCallRow, session_started_ms: i64) -> Value {
    let args: Value = serde_json::from_str(&c.args).unwrap_or_else(|_| json!(c.args));
    json!({
        "seq": c.seq,
        "tool": c.tool,
        "args": args,
        "startedAtMs": c.started_us as f64 / 1000.0,
        "offsetNs": (c.started_us - session_started_ms * 1000).saturating_mul(1000),
        "durationMs": c.duration_us as f64 / 1000.0,
        "responseBytes": c.response_bytes,
        "isError": c.is_error,
        "summary": c.summary,
        "client": c.client,
        "side": strobe_core::caller::side(&c.client),
    })
}

/// Most agent calls one request returns.
const MAX_AGENT_CALLS: usize = 10_000;

async fn agent(s: Shared, Path(id): Path<String>) -> Response {
    json_result(
        blocking(move || {
            let session = s
                .store
                .session(&id)
                .map_err(|e| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "INTERNAL_ERROR",
                        &e.to_string(),
                    )
                })?
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::NOT_FOUND,
                        "SESSION_NOT_FOUND",
                        &format!("no session {id:?}"),
                    )
                })?;
            let calls = s
                .store
                .agent_calls(&id, 0, MAX_AGENT_CALLS)
                .map_err(|e| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "INTERNAL_ERROR",
                        &e.to_string(),
                    )
                })?
                .unwrap_or_default();
            // Recorded off the request path, so stored order may differ from
            // the order the calls came in: show them by start.
            let mut calls = calls;
            calls.sort_by_key(|c| (c.started_us, c.seq));
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| agent_call_json(c, session.started_at))
                .collect();
            Ok(json!({"calls": calls}))
        })
        .await,
    )
}

/// The patterns to add to and remove from a live session.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceBody {
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

async fn trace(s: Shared, Path(id): Path<String>, body: axum::Json<Value>) -> Response {
    let body: TraceBody = match serde_json::from_value(body.0) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                &format!(
                    "bad trace request: {e}; send {{\"add\": [patterns], \"remove\": [patterns]}}"
                ),
            );
        }
    };
    if body.add.is_empty() && body.remove.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            "nothing to do: give patterns in 'add' and/or 'remove'",
        );
    }
    json_result(
        blocking(move || {
            s.mgr
                .trace_live(&id, &body.add, &body.remove)
                .map(|r| serde_json::to_value(&r).expect("serializable"))
                .map_err(tool_error)
        })
        .await,
    )
}

async fn live(
    s: Shared,
    Path(id): Path<String>,
    ws: axum::extract::ws::WebSocketUpgrade,
) -> Response {
    // An unknown session is refused before the upgrade, as plain JSON.
    let known = {
        let (mgr, id) = (s.mgr.clone(), id.clone());
        blocking(move || mgr.status(&id).map(|_| ()).map_err(tool_error)).await
    };
    if let Err(e) = known {
        return e.into_response();
    }
    let state = s.0.clone();
    ws.on_upgrade(move |socket| crate::live::serve(socket, state, id))
}

async fn tests(s: Shared) -> Response {
    json_result(blocking(move || Ok(json!({"runs": s.tests.list()}))).await)
}

async fn test(s: Shared, Path(id): Path<String>) -> Response {
    json_result(
        blocking(move || {
            s.tests.status(&id, std::time::Duration::ZERO).map_err(|e| {
                if e.code == strobe_core::ErrorCode::ValidationError {
                    ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", &e.message)
                } else {
                    tool_error(e)
                }
            })
        })
        .await,
    )
}

/// `…/export?format=chrome|perfetto`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    format: Option<String>,
    /// The token may come in the query; it is not an export parameter.
    #[allow(dead_code)]
    token: Option<String>,
}

async fn export(s: Shared, Path(id): Path<String>, Query(q): Query<ExportQuery>) -> Response {
    let perfetto = match q.format.as_deref() {
        None | Some("chrome") => false,
        Some("perfetto") => true,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                &format!("'format' {other:?} is not \"chrome\" or \"perfetto\""),
            );
        }
    };
    let name = id.clone();
    let r = blocking(move || {
        let _ = s.store.flush();
        let mut out = Vec::new();
        if perfetto {
            let captures = s.mgr.captures(&id);
            let typed = |h: &strobe_core::event::EventHeader, payload: &[u8]| {
                let d = captures.as_ref().and_then(|c| c.read().ok());
                strobe_session::trace::typed_in(d.as_deref(), h, payload)
            };
            strobe_view::perfetto::perfetto_trace(&s.store, &id, &mut out, Some(&typed))
                .map_err(view_error)?;
        } else {
            strobe_view::export::chrome_trace(&s.store, &id, &mut out).map_err(view_error)?;
        }
        Ok(out)
    })
    .await;
    let (mime, ext) = if perfetto {
        ("application/octet-stream", "pftrace")
    } else {
        ("application/json", "trace.json")
    };
    match r {
        Ok(bytes) => Response::builder()
            .header(header::CONTENT_TYPE, mime)
            .header(
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}.{ext}\"", name.replace('"', "")),
            )
            .body(Body::from(bytes))
            .unwrap_or_else(|e| {
                error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL_ERROR",
                    &e.to_string(),
                )
            }),
        Err(e) => e.into_response(),
    }
}
