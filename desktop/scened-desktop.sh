# scened: the desktop entries that "scenectl desktop-entries" writes for the URL schemes of
# scened's apps (x-scheme-handler/SCHEME, running scenectl open -- %u), so that xdg-open and GIO
# find them: this user's own instance's, then the system instance's, ahead of the other data
# directories (as flatpak adds its exports). Installed as /etc/profile.d/scened-desktop.sh;
# the user environment generator 60-scened-desktop does the same for the user's services.
scened_desktop_dirs="${XDG_DATA_HOME:-$HOME/.local/share}/scened-desktop:/var/lib/scened-desktop"
case ":${XDG_DATA_DIRS:-}:" in
    *":/var/lib/scened-desktop:"*) ;;
    *) XDG_DATA_DIRS="$scened_desktop_dirs:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
       export XDG_DATA_DIRS ;;
esac
unset scened_desktop_dirs
