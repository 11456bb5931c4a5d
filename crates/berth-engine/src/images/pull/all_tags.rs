//! `pull --all-tags`: every tag of a repository, as dockerd's
//! `pullV2Repository` does it: the tags listed by the first endpoint that
//! can (mirrors first, as for any pull), pulled one after another in the
//! registry's order, each with its `TAG: Pulling from …` and `Digest: …`
//! lines, and one `Status:` line for the repository at the end. A tag that
//! fails stops the pull; the tags pulled before it stay.

use berth_registry::client::RegistryClient;
use berth_store::Store;
use berth_types::Reference;

use super::download::Progress;
use super::error::PullError;
use super::{pull_resolved, requested_platform, status_event, PullRequest, PulledImage};

/// What a pull of all tags left in the store.
#[derive(Clone, Debug)]
pub struct PulledRepository {
    /// The repository, without tag: `docker.io/library/busybox`.
    pub name: Reference,
    /// One per tag, in the order pulled.
    pub images: Vec<PulledImage>,
    /// True when every tag already named the image it names now (also
    /// when there was no tag, as Docker says then).
    pub up_to_date: bool,
}

/// Pulls every tag of the repository `request.reference` names; a tag or
/// digest in it is Docker's error.
pub fn pull_all_tags(
    store: &mut Store,
    request: &PullRequest,
    progress: Progress<'_>,
) -> Result<PulledRepository, PullError> {
    let name =
        Reference::parse_normalized(&request.reference).map_err(PullError::InvalidReference)?;
    if !name.is_name_only() {
        return Err(PullError::TagWithAllTags);
    }
    let platform = requested_platform(request)?;
    let (client, tags) = list_tags(request, &name)?;
    let mut images = Vec::with_capacity(tags.len());
    for tag in tags {
        let reference = name.with_tag(&tag).map_err(PullError::InvalidReference)?;
        let resolved = client.resolve_manifest(&reference, &platform)?;
        images.push(pull_resolved(
            store,
            &client,
            &reference,
            &resolved,
            request.concurrency,
            progress,
        )?);
    }
    let up_to_date = images.iter().all(|image| image.up_to_date);
    progress(status_event(&name, up_to_date));
    Ok(PulledRepository {
        name,
        images,
        up_to_date,
    })
}

/// The tags, from the first endpoint (mirror or registry) that lists them,
/// and that endpoint's client for the pulls.
fn list_tags(
    request: &PullRequest,
    name: &Reference,
) -> Result<(RegistryClient, Vec<String>), PullError> {
    let mut clients = request.settings.pull_clients(name.domain())?;
    let last = clients
        .pop()
        .expect("the registry itself is always a candidate");
    for mirror in clients {
        match mirror.list_tags(name) {
            Ok(tags) => return Ok((mirror, tags)),
            Err(error) => {
                tracing::info!(mirror = mirror.base_url(), error = %format!("{error:#}"), "mirror failed, trying the next endpoint");
            }
        }
    }
    let tags = last.list_tags(name)?;
    Ok((last, tags))
}
