//! Who may read `/metrics`: callers the API server authenticates (TokenReview of the bearer
//! token) and authorizes for `get` on the non-resource path (SubjectAccessReview), as
//! controller-runtime's `filters.WithAuthenticationAndAuthorization` does for upstream's metrics
//! listener. Answers and texts are that filter's.
//!
//! Input: each request's `Authorization` header and path. Output: the request passed on, or
//! `401 Unauthorized`, `403 Authorization denied for user U`, `500 Authentication failed` /
//! `500 Authorization for user U failed`. Network: TokenReview and SubjectAccessReview creates
//! against the Kubernetes API.
//!
//! Decisions are cached as controller-runtime caches them: an authentication for 1 minute, an
//! allowed authorization for 5 minutes, a denied one for 30 seconds. Cache keys are SHA-256
//! digests of the token, never the token itself; the cache is bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

const AUTHN_TTL: Duration = Duration::from_secs(60);
const ALLOWED_TTL: Duration = Duration::from_secs(300);
const DENIED_TTL: Duration = Duration::from_secs(30);
/// Entries kept per cache; beyond it the cache is emptied (callers are a handful of scrapers).
const MAX_ENTRIES: usize = 4096;
/// Bound of one review call.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// A cache of decisions with the time each was made.
type Cache<K, V> = Arc<Mutex<HashMap<K, (V, Instant)>>>;

/// The authenticating and authorizing filter's state.
#[derive(Clone)]
pub struct MetricsAuth {
    client: kube::Client,
    authn: Cache<[u8; 32], Option<UserInfo>>,
    authz: Cache<String, bool>,
}

impl MetricsAuth {
    pub fn new(client: kube::Client) -> MetricsAuth {
        MetricsAuth {
            client,
            authn: Arc::default(),
            authz: Arc::default(),
        }
    }

    /// The user the token belongs to (`None`: not authenticated).
    async fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, kube::Error> {
        use sha2::Digest;
        let key: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some((user, at)) = lock(&self.authn).get(&key)
            && at.elapsed() < AUTHN_TTL
        {
            return Ok(user.clone());
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let created = with_timeout(api.create(&PostParams::default(), &review)).await?;
        let user = created
            .status
            .filter(|s| s.authenticated == Some(true))
            .and_then(|s| s.user);
        remember(&self.authn, key, user.clone());
        Ok(user)
    }

    async fn authorize(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<bool, kube::Error> {
        let key = format!(
            "{}\u{0}{}\u{0}{:?}\u{0}{verb}\u{0}{path}",
            user.username.as_deref().unwrap_or(""),
            user.uid.as_deref().unwrap_or(""),
            user.groups
        );
        if let Some((allowed, at)) = lock(&self.authz).get(&key)
            && at.elapsed() < if *allowed { ALLOWED_TTL } else { DENIED_TTL }
        {
            return Ok(*allowed);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some(verb.to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let created = with_timeout(api.create(&PostParams::default(), &review)).await?;
        let allowed = created.status.is_some_and(|s| s.allowed);
        remember(&self.authz, key, allowed);
        Ok(allowed)
    }
}

fn lock<K, V>(m: &Mutex<HashMap<K, V>>) -> std::sync::MutexGuard<'_, HashMap<K, V>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn remember<K: std::hash::Hash + Eq, V>(m: &Mutex<HashMap<K, (V, Instant)>>, key: K, value: V) {
    let mut map = lock(m);
    if map.len() >= MAX_ENTRIES {
        map.clear();
    }
    map.insert(key, (value, Instant::now()));
}

async fn with_timeout<T>(
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, kube::Error> {
    match tokio::time::timeout(REVIEW_TIMEOUT, call).await {
        Ok(result) => result,
        Err(_) => Err(kube::Error::Service(
            format!("no answer within {}s", REVIEW_TIMEOUT.as_secs()).into(),
        )),
    }
}

/// Go's `http.Error`.
fn go_error(status: StatusCode, text: &str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        format!("{text}\n"),
    )
        .into_response()
}

/// The middleware: `axum::middleware::from_fn_with_state(auth, metrics_auth::filter)`.
pub async fn filter(State(auth): State<MetricsAuth>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| token.trim().to_owned())
        })
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return go_error(StatusCode::UNAUTHORIZED, "Unauthorized");
    };
    let user = match auth.authenticate(&token).await {
        Ok(Some(user)) => user,
        Ok(None) => return go_error(StatusCode::UNAUTHORIZED, "Unauthorized"),
        Err(e) => {
            tracing::error!(error = %e, "Authentication failed");
            return go_error(StatusCode::INTERNAL_SERVER_ERROR, "Authentication failed");
        }
    };
    let name = user.username.clone().unwrap_or_default();
    let verb = request.method().as_str().to_ascii_lowercase();
    let path = request.uri().path().to_owned();
    match auth.authorize(&user, &verb, &path).await {
        Ok(true) => next.run(request).await,
        Ok(false) => {
            let text = format!("Authorization denied for user {name}");
            tracing::debug!(user = %name, %path, "{text}");
            go_error(StatusCode::FORBIDDEN, &text)
        }
        Err(e) => {
            let text = format!("Authorization for user {name} failed");
            tracing::error!(error = %e, "{text}");
            go_error(StatusCode::INTERNAL_SERVER_ERROR, &text)
        }
    }
}
