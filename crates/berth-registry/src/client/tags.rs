//! A repository's tags (`GET /v2/<name>/tags/list`), page after page as
//! the registry's `Link: <…>; rel="next"` header says, as Docker's
//! `tags.All` reads them (distribution's `registry/client/repository.go`)
//! for `pull --all-tags`.

use std::collections::HashSet;

use berth_types::Reference;
use serde::Deserialize;
use ureq::http::Method;

use super::error::ClientError;
use super::manifest::header;
use super::transport::Call;
use super::{pull_scope, RegistryClient};

/// One page of tags; a registry may list thousands on one page.
const PAGE_LIMIT: u64 = 32 * 1024 * 1024;

/// More pages than this is a registry that never ends its list.
const MAX_PAGES: usize = 10_000;

#[derive(Deserialize)]
struct TagPage {
    /// `null` for a repository without tags on some registries.
    #[serde(default)]
    tags: Option<Vec<String>>,
}

impl RegistryClient {
    /// Every tag of `image`'s repository, in the order the registry lists
    /// them. A repository the registry does not know is Docker's
    /// `repository NAME not found: name unknown: …`.
    pub fn list_tags(&self, image: &Reference) -> Result<Vec<String>, ClientError> {
        let repository = image.path();
        let scopes = [pull_scope(repository)];
        let mut url = self.inner.repository_url(repository, "tags/list");
        let mut seen = HashSet::new();
        let mut tags = Vec::new();
        loop {
            if !seen.insert(url.clone()) || seen.len() > MAX_PAGES {
                return Err(ClientError::EndlessTagList { url });
            }
            let call = Call::new(Method::GET, url.clone(), &scopes);
            let mut response = match self.inner.execute(call, |status| status == 200) {
                Err(ClientError::Registry {
                    status: 404,
                    errors,
                    ..
                }) => {
                    return Err(ClientError::RepositoryNotFound {
                        repository: image.familiar_name(),
                        errors,
                    })
                }
                other => other?,
            };
            let next = header(&response, "Link")
                .and_then(next_link)
                .map(|link| resolve_link(&url, link));
            let bytes = response
                .body_mut()
                .with_config()
                .limit(PAGE_LIMIT)
                .read_to_vec()
                .map_err(|source| ClientError::Transport {
                    method: "Get",
                    url: url.clone(),
                    source,
                })?;
            let page: TagPage =
                serde_json::from_slice(&bytes).map_err(|source| ClientError::InvalidTagList {
                    url: url.clone(),
                    source,
                })?;
            tags.extend(page.tags.unwrap_or_default());
            match next {
                Some(next) => url = next,
                None => return Ok(tags),
            }
        }
    }
}

/// The target of the `rel="next"` link of a `Link` header (RFC 8288):
/// `</v2/x/tags/list?last=b&n=2>; rel="next"` → `/v2/x/tags/list?last=b&n=2`.
fn next_link(value: &str) -> Option<&str> {
    value.split(',').find_map(|link| {
        let (target, parameters) = link.trim().split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let is_next = parameters.split(';').any(|parameter| {
            parameter
                .trim()
                .split_once('=')
                .is_some_and(|(name, value)| {
                    name.trim().eq_ignore_ascii_case("rel")
                        && value
                            .trim()
                            .trim_matches('"')
                            .split_whitespace()
                            .any(|relation| relation.eq_ignore_ascii_case("next"))
                })
        });
        is_next.then_some(target)
    })
}

/// `link` resolved against the URL of the page that gave it: absolute URLs
/// as they are, `/path` on the same host, `?query` on the same path.
fn resolve_link(page: &str, link: &str) -> String {
    if link.starts_with("http://") || link.starts_with("https://") {
        return link.to_owned();
    }
    let scheme_end = page.find("://").map_or(0, |index| index + 3);
    let origin_end = page[scheme_end..]
        .find('/')
        .map_or(page.len(), |index| scheme_end + index);
    let origin = &page[..origin_end];
    if link.starts_with('/') {
        return format!("{origin}{link}");
    }
    let path = page.split('?').next().unwrap_or(page);
    if link.starts_with('?') {
        return format!("{path}{link}");
    }
    // A relative path: beside the page's last segment.
    let directory = path
        .rsplit_once('/')
        .map_or(path, |(directory, _)| directory);
    format!("{directory}/{link}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_link_is_found_among_others() {
        assert_eq!(
            next_link(r#"</v2/x/tags/list?last=b&n=2>; rel="next""#),
            Some("/v2/x/tags/list?last=b&n=2")
        );
        assert_eq!(
            next_link(
                r#"</first>; rel="first", <https://r.example/v2/x/tags/list?last=c>; rel=next"#
            ),
            Some("https://r.example/v2/x/tags/list?last=c")
        );
        assert_eq!(next_link(r#"</prev>; rel="prev""#), None);
        assert_eq!(next_link("garbage"), None);
    }

    #[test]
    fn links_resolve_against_the_page() {
        let page = "http://127.0.0.1:5000/v2/a/b/tags/list?n=2";
        assert_eq!(
            resolve_link(page, "/v2/a/b/tags/list?last=x&n=2"),
            "http://127.0.0.1:5000/v2/a/b/tags/list?last=x&n=2"
        );
        assert_eq!(
            resolve_link(page, "?last=x"),
            "http://127.0.0.1:5000/v2/a/b/tags/list?last=x"
        );
        assert_eq!(
            resolve_link(page, "list?last=y"),
            "http://127.0.0.1:5000/v2/a/b/tags/list?last=y"
        );
        assert_eq!(
            resolve_link(page, "https://cdn.example/page2"),
            "https://cdn.example/page2"
        );
    }
}
