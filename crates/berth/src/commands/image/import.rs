//! `import`.

use berth_engine::images::{import_image, ImportRequest};
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Apply Dockerfile instruction to the created image
    #[arg(short, long = "change", value_name = "change")]
    pub changes: Vec<String>,
    /// Set commit message for imported image
    #[arg(short, long)]
    pub message: Option<String>,
    /// Set platform if server is multi-platform capable
    #[arg(long)]
    pub platform: Option<String>,
    /// file|- (a root filesystem tarball; "-" reads STDIN)
    pub file: String,
    /// REPOSITORY[:TAG]
    pub reference: Option<String>,
}

pub fn run(engine: &mut Engine, args: &ImportArgs) -> anyhow::Result<i32> {
    if let Some(platform) = &args.platform {
        let wanted = format!("linux/{}", berth_image::host_architecture());
        anyhow::ensure!(
            platform == &wanted,
            "platform {platform:?} is not supported (this host is {wanted})"
        );
    }
    let request = ImportRequest {
        reference: args.reference.clone(),
        changes: args.changes.clone(),
        message: args.message.clone(),
        source_name: args.file.clone(),
    };
    let id = if args.file == "-" {
        import_image(engine.store_mut(), std::io::stdin().lock(), &request)?
    } else {
        if args.file.contains("://") {
            anyhow::bail!("importing from a URL is not supported: {}", args.file);
        }
        let file = fs_err::File::open(&args.file)?;
        import_image(
            engine.store_mut(),
            std::io::BufReader::with_capacity(1 << 20, file),
            &request,
        )?
    };
    println!("{id}");
    Ok(0)
}
